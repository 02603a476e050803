// Module-resolution hooks (node:module register) that add the export condition "waymark-source"
// to every import. Only @waymark-dev/client (clients/ts, a workspace package) declares it: with it
// the package resolves to its TypeScript sources, which tsx compiles, so `waymark runs ...` uses
// the client exactly as it is in the checkout, with no build step. An application importing the
// package without the condition gets its compiled dist/.
export async function resolve(specifier, context, nextResolve) {
  return nextResolve(specifier, { ...context, conditions: [...context.conditions, 'waymark-source'] });
}
