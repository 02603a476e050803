import type { LanguageModelV3 } from './language-model.js';

/*
 * Which models given in code stream (model-call.ts). A model built from configuration always does;
 * one passed to createAgentRuntime({ models }) does only when marked, since a test double may
 * implement doGenerate alone.
 */

const STREAMS = Symbol.for('waymark.streamingModel');

/** Marks a model given in code as one whose doStream works: its calls publish token deltas. */
export function streamingModel<M extends LanguageModelV3>(model: M): M {
  (model as unknown as Record<symbol, boolean>)[STREAMS] = true;
  return model;
}

export function isStreamingModel(model: LanguageModelV3): boolean {
  return (model as unknown as Record<symbol, boolean>)[STREAMS] === true;
}
