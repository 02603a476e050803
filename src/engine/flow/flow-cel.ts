// flow/: the CEL conditions of a flow's branch edges: compiling, checking what they read, evaluating.
// Pure: evaluation reads only the state it is given, so a replay decides every branch the same way.
import { celEnv, isCelError, parse, plan, type CelResult } from '@bufbuild/cel';
import { DEFAULT_DEFINITION_LIMITS, type DefinitionLimits } from '../../journal/definition-limits.js';
import type { Json } from '../../journal/run.js';

/*
 * Conditions are CEL (cel.dev) over one variable, `state`, with @bufbuild/cel. A condition is
 * refused at registration when it does not parse, calls a function CEL does not have, names a
 * variable other than `state` (or a macro's own), or reads a state property the state schema does
 * not declare (`state.x`, `state["x"]`; a computed index into `state` is refused because it could
 * read anything).
 *
 * @bufbuild/cel has no cost tracking, so the cost is bounded here (docs/flows.md "Limits"): the
 * text's length and nesting before it is parsed (its parser recurses on nesting), then an estimate
 * of the steps an evaluation takes: one per node, a comprehension's body times the size of the list
 * or map it walks. A literal's size is known at registration; a list read from the state is at most
 * the number of values the state holds, known when the condition is evaluated, and the estimate is
 * checked again then, before anything runs. CEL here has no function that makes a collection
 * larger than its operands (no `range`, `split` or repeat), so those two bounds are sound.
 */

/** Nesting of brackets a condition may have (the parser recurses on it). */
const MAX_NESTING = 32;

const env = celEnv();

type Expr = ReturnType<typeof parse>['expr'];
/** Operators the evaluator implements itself (short-circuit, indexing, macros), not as functions of the environment. */
const SPECIAL_FORMS = new Set(['_&&_', '_||_', '_?_:_', '_[_]', '@not_strictly_false']);

export interface CompiledCondition {
  evaluate(state: Record<string, Json>): CelResult;
}

/** Compiles `text`, or returns why it cannot be used (one sentence). */
export function compileCondition(text: string, declared: ReadonlySet<string>, limits: DefinitionLimits = DEFAULT_DEFINITION_LIMITS): CompiledCondition | string {
  if (text.length > limits.conditionChars) return `is ${text.length} characters; a condition may have at most ${limits.conditionChars} (WAYMARK_MAX_CONDITION_CHARS)`;
  if (nesting(text) > MAX_NESTING) return `nests brackets deeper than ${MAX_NESTING} levels`;
  let parsed: ReturnType<typeof parse>;
  try {
    parsed = parse(text);
  } catch (error) {
    return `does not parse: ${(error as Error).message}`;
  }
  const problem = readProblem(parsed.expr, declared, new Set());
  if (problem) return problem;
  const cost = costOf(parsed.expr);
  const atRegistration = cost.steps(0);
  if (atRegistration > limits.conditionCost) {
    return `would take about ${Math.round(atRegistration)} evaluation steps; a condition may take at most ${limits.conditionCost} (WAYMARK_MAX_CONDITION_COST)`;
  }
  let run: (bindings: { state: unknown }) => CelResult;
  try {
    run = plan(env, parsed) as (bindings: { state: unknown }) => CelResult;
  } catch (error) {
    return `does not compile: ${(error as Error).message}`;
  }
  if (!cost.readsCollections) return { evaluate: (state) => run({ state: state as unknown }) };
  return {
    evaluate: (state) => {
      const steps = cost.steps(valueCount(state, limits.conditionCost));
      if (steps > limits.conditionCost) {
        throw new Error(`would take about ${Math.round(Math.min(steps, Number.MAX_SAFE_INTEGER))} evaluation steps over this state; a condition may take at most ${limits.conditionCost} (WAYMARK_MAX_CONDITION_COST)`);
      }
      return run({ state: state as unknown });
    },
  };
}

/** The deepest nesting of (), [] and {} outside string literals: linear, before the parser recurses. */
function nesting(text: string): number {
  let depth = 0;
  let max = 0;
  let quote: string | null = null;
  for (let i = 0; i < text.length; i++) {
    const c = text[i]!;
    if (quote) {
      if (c === '\\') i++;
      else if (c === quote) quote = null;
      continue;
    }
    if (c === '"' || c === "'") quote = c;
    else if (c === '(' || c === '[' || c === '{') max = Math.max(max, ++depth);
    else if (c === ')' || c === ']' || c === '}') depth--;
  }
  return max;
}

/**
 * The number of JSON values in `state`, counting no further than `cap + 1`: no list or map a
 * condition derives from the state is larger.
 */
function valueCount(state: Record<string, Json>, cap: number): number {
  let count = 0;
  const stack: Json[] = [state];
  while (stack.length > 0 && count <= cap) {
    const value = stack.pop()!;
    count++;
    if (value === null || typeof value !== 'object') continue;
    if (Array.isArray(value)) for (const v of value) stack.push(v);
    else for (const v of Object.values(value)) stack.push(v);
  }
  return count;
}

interface Cost {
  /** Estimated steps, given the size of any collection read from the state. */
  steps(stateValues: number): number;
  /** Whether the estimate depends on the state (a comprehension over what it reads). */
  readsCollections: boolean;
}

/**
 * The evaluation-cost estimate of an expression (see the comment at the top): one step per node; a
 * comprehension's body once per element of what it walks; inside a body, a call on something read
 * from `state` (not from the element) once per value of the state, since it may walk all of it on
 * every turn. Recursive over the AST, whose depth the nesting check bounds.
 */
function costOf(root: Expr | undefined): Cost {
  let readsCollections = false;
  let largestLiteral = 0;
  /** A size bound for the collection `e` evaluates to, given S (values in the state). */
  const sizeOf = (e: Expr | undefined): ((s: number) => number) => {
    const kind = e?.exprKind;
    if (kind?.case === 'listExpr') return () => kind.value.elements.length;
    if (kind?.case === 'structExpr') return () => kind.value.entries.length;
    if (kind?.case === 'callExpr' && kind.value.function === '_+_') {
      const [a, b] = kind.value.args.map(sizeOf);
      return (s) => (a ? a(s) : 0) + (b ? b(s) : 0);
    }
    if (kind?.case === 'comprehensionExpr') return sizeOf(kind.value.iterRange);
    readsCollections = true;
    return (s) => Math.max(s, largestLiteral);
  };
  const walk = (e: Expr | undefined, inBody: boolean): ((s: number) => number) => {
    const kind = e?.exprKind;
    if (!kind) return () => 0;
    switch (kind.case) {
      case 'listExpr':
        largestLiteral = Math.max(largestLiteral, kind.value.elements.length);
        return sum(kind.value.elements.map((x) => walk(x, inBody)));
      case 'structExpr':
        largestLiteral = Math.max(largestLiteral, kind.value.entries.length);
        return sum(kind.value.entries.flatMap((entry) => [walk(entry.keyKind.case === 'mapKey' ? entry.keyKind.value : undefined, inBody), walk(entry.value, inBody)]));
      case 'selectExpr':
        return sum([walk(kind.value.operand, inBody)]);
      case 'callExpr': {
        const call = kind.value;
        const parts = [walk(call.target, inBody), ...call.args.map((x) => walk(x, inBody))];
        if (call.function === '@in') parts.push(sizeOf(call.args[1]));
        else if (inBody && !SPECIAL_FORMS.has(call.function) && [call.target, ...call.args].some(readsState)) {
          readsCollections = true;
          parts.push((s) => s);
        }
        return sum(parts);
      }
      case 'comprehensionExpr': {
        const c = kind.value;
        const range = sizeOf(c.iterRange);
        const body = sum([walk(c.loopCondition, true), walk(c.loopStep, true)]);
        const rest = sum([walk(c.iterRange, inBody), walk(c.accuInit, inBody), walk(c.result, inBody)]);
        return (s) => rest(s) + range(s) * body(s);
      }
      default:
        return () => 1;
    }
  };
  const steps = walk(root, false);
  return { steps, readsCollections };
}

/** Whether `e` reads `state` anywhere (iteratively: it is only asked of call operands). */
function readsState(e: Expr | undefined): boolean {
  const stack: (Expr | undefined)[] = [e];
  while (stack.length > 0) {
    const kind = stack.pop()?.exprKind;
    if (!kind) continue;
    switch (kind.case) {
      case 'identExpr':
        if (kind.value.name === 'state') return true;
        break;
      case 'selectExpr':
        stack.push(kind.value.operand);
        break;
      case 'callExpr':
        stack.push(kind.value.target, ...kind.value.args);
        break;
      case 'listExpr':
        stack.push(...kind.value.elements);
        break;
      case 'structExpr':
        for (const entry of kind.value.entries) stack.push(entry.keyKind.case === 'mapKey' ? entry.keyKind.value : undefined, entry.value);
        break;
      case 'comprehensionExpr':
        stack.push(kind.value.iterRange, kind.value.accuInit, kind.value.loopCondition, kind.value.loopStep, kind.value.result);
        break;
      default:
        break;
    }
  }
  return false;
}

function sum(parts: ((s: number) => number)[]): (s: number) => number {
  return (s) => {
    let total = 1;
    for (const part of parts) total += part(s);
    return total;
  };
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
      // CEL's `matches` runs on the JavaScript engine here, which backtracks: a pattern from a
      // tenant could take exponential time over a state string.
      if (call.function === 'matches') return 'calls "matches": regular expressions are not supported in conditions (use contains, startsWith or endsWith)';
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
