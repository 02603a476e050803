import { WaymarkError } from '../journal/errors.js';

/*
 * Errors of the agent loop. Like every Waymark error each has a stable `reason` (lower-cased into
 * the run's error record, e.g. `budget_exceeded`), structured fields, and a message that says what
 * to do.
 */

/**
 * A model call whose estimated cost would pass a run's budget was not made. Thrown out of
 * ctx.agent, so a workflow that does not catch it ends FAILED with reason `budget_exceeded`.
 * `budgetRunId` is the run whose budget it is: the run itself, or an ancestor (a child's spend
 * counts toward its parents' budgets).
 */
export class BudgetExceededError extends WaymarkError {
  readonly reason = 'BUDGET_EXCEEDED';
  constructor(
    readonly budgetRunId: string,
    readonly budgetUsd: number,
    readonly spentUsd: number,
    readonly estimatedCostUsd: number,
    readonly model: string,
    /** Estimates of the tree's model calls in flight when this one was refused. */
    readonly reservedUsd = 0,
  ) {
    super(`the next call to ${model} (estimated $${fmt(estimatedCostUsd)}) would pass the budget of $${fmt(budgetUsd)} of run ${budgetRunId}, which has spent $${fmt(spentUsd)}${reservedUsd > 0 ? ` and has $${fmt(reservedUsd)} reserved by calls in flight` : ''}; the call was not made. Start the run with a larger budget_usd, or catch BudgetExceededError to return what the workflow has`);
  }
}

/** A budgeted run asked for a model with no price, so its spend could not be bounded. */
export class ModelPriceMissingError extends WaymarkError {
  readonly reason = 'MODEL_PRICE_MISSING';
  constructor(readonly model: string, readonly budgetRunId: string) {
    super(`run ${budgetRunId} has a budget but model ${model} has no price, so the call was not made; add its price to WAYMARK_MODEL_PRICES (USD per million tokens, e.g. {"${model}": {"input": 0, "output": 0}} for a local model)`);
  }
}

/** A model name that configuration does not know. */
export class UnknownModelError extends WaymarkError {
  readonly reason = 'UNKNOWN_MODEL';
  constructor(readonly model: string, readonly detail: string) {
    super(`model "${model}" is not configured (${detail}); use openai:<model>, anthropic:<model>, scripted:auto, default, or an endpoint or alias from WAYMARK_MODELS`);
  }
}

/** A model that is named correctly but cannot be called here (a missing API key, no base URL). */
export class ModelNotConfiguredError extends WaymarkError {
  readonly reason = 'MODEL_NOT_CONFIGURED';
  constructor(readonly model: string, readonly detail: string) {
    super(`model ${model} cannot be called: ${detail}`);
  }
}

/** A model setting (WAYMARK_MODELS, WAYMARK_MODEL_PRICES, …) that failed validation. */
export class ModelConfigError extends WaymarkError {
  readonly reason = 'MODEL_CONFIG_INVALID';
  constructor(readonly variable: string, readonly expected: string) {
    super(`invalid setting ${variable}: ${expected}`);
  }
}

function fmt(usd: number): string {
  return usd.toFixed(6).replace(/0+$/, '').replace(/\.$/, '');
}
