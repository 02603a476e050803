// flow/: the CEL conditions of a flow's branch edges: compiling, checking what they read, evaluating.
// Pure: evaluation reads only the state it is given, so a replay decides every branch the same way.
import { celEnv, isCelError, parse, plan, type CelResult } from '@bufbuild/cel';
import type { Json } from '../../journal/run.js';

/*
 * Conditions are CEL (cel.dev) over one variable, `state`, with @bufbuild/cel. A condition is
 * refused at registration when it does not parse, calls a function CEL does not have, names a
 * variable other than `state` (or a macro's own), or reads a state property the state schema does
 * not declare (`state.x`, `state["x"]`; a computed index into `state` is refused because it could
 * read anything).
 */

const env = celEnv();

type Expr = ReturnType<typeof parse>['expr'];
/** Operators the evaluator implements itself (short-circuit, indexing, macros), not as functions of the environment. */
const SPECIAL_FORMS = new Set(['_&&_', '_||_', '_?_:_', '_[_]', '@not_strictly_false']);

export interface CompiledCondition {
  evaluate(state: Record<string, Json>): CelResult;
}

/** Compiles `text`, or returns why it cannot be used (one sentence). */
export function compileCondition(text: string, declared: ReadonlySet<string>): CompiledCondition | string {
  let parsed: ReturnType<typeof parse>;
  try {
    parsed = parse(text);
  } catch (error) {
    return `does not parse: ${(error as Error).message}`;
  }
  const problem = readProblem(parsed.expr, declared, new Set());
  if (problem) return problem;
  let run: (bindings: { state: unknown }) => CelResult;
  try {
    run = plan(env, parsed) as (bindings: { state: unknown }) => CelResult;
  } catch (error) {
    return `does not compile: ${(error as Error).message}`;
  }
  return { evaluate: (state) => run({ state: state as unknown }) };
}

/** Evaluates a compiled condition to a bool, or the reason it did not give one. */
export function conditionValue(condition: CompiledCondition, state: Record<string, Json>): { value: boolean } | { error: string } {
  let result: CelResult;
  try {
    result = condition.evaluate(state);
  } catch (error) {
    return { error: (error as Error).message };
  }
  if (isCelError(result)) return { error: result.message };
  if (typeof result !== 'boolean') return { error: `evaluated to ${typeof result}, not a bool` };
  return { value: result };
}

function readProblem(expr: Expr | undefined, declared: ReadonlySet<string>, bound: ReadonlySet<string>): string | null {
  if (!expr) return null;
  const kind = expr.exprKind;
  switch (kind.case) {
    case 'identExpr':
      if (kind.value.name === 'state' || bound.has(kind.value.name)) return null;
      return `names "${kind.value.name}": a condition reads only "state" (state.<property>)`;
    case 'selectExpr': {
      const operand = kind.value.operand;
      if (operand?.exprKind.case === 'identExpr' && operand.exprKind.value.name === 'state' && !bound.has('state')) {
        return declared.has(kind.value.field) ? null : undeclared(kind.value.field, declared);
      }
      return readProblem(operand, declared, bound);
    }
    case 'callExpr': {
      const call = kind.value;
      if (!SPECIAL_FORMS.has(call.function) && !env.funcs.find(call.function)) return `calls "${call.function}", which CEL does not have`;
      const [first, second] = call.args;
      if (call.function === '_[_]' && first?.exprKind.case === 'identExpr' && first.exprKind.value.name === 'state' && !bound.has('state')) {
        if (second?.exprKind.case !== 'constExpr' || second.exprKind.value.constantKind.case !== 'stringValue') {
          return 'indexes "state" with a computed key: write state.<property> or state["<property>"]';
        }
        const name = second.exprKind.value.constantKind.value;
        return declared.has(name) ? null : undeclared(name, declared);
      }
      for (const e of [call.target, ...call.args]) {
        const problem = readProblem(e, declared, bound);
        if (problem) return problem;
      }
      return null;
    }
    case 'listExpr':
      for (const e of kind.value.elements) {
        const problem = readProblem(e, declared, bound);
        if (problem) return problem;
      }
      return null;
    case 'structExpr':
      for (const entry of kind.value.entries) {
        const key = entry.keyKind.case === 'mapKey' ? entry.keyKind.value : undefined;
        const problem = readProblem(key, declared, bound) ?? readProblem(entry.value, declared, bound);
        if (problem) return problem;
      }
      return null;
    case 'comprehensionExpr': {
      const c = kind.value;
      const inner = new Set([...bound, c.iterVar, c.accuVar, ...(c.iterVar2 ? [c.iterVar2] : [])]);
      return readProblem(c.iterRange, declared, bound) ?? readProblem(c.accuInit, declared, bound)
        ?? readProblem(c.loopCondition, declared, inner) ?? readProblem(c.loopStep, declared, inner) ?? readProblem(c.result, declared, inner);
    }
    default:
      return null;
  }
}

function undeclared(name: string, declared: ReadonlySet<string>): string {
  const names = [...declared].sort().join(', ') || 'none';
  return `reads state.${name}, which the state schema does not declare (declared: ${names})`;
}
