import type { LanguageModel } from 'ai';

/*
 * The AI SDK's model interface (LanguageModelV3 of @ai-sdk/provider), taken from `ai`'s public
 * types: `@ai-sdk/provider` is only a dependency of `ai`, not of Waymark, so importing it directly
 * would lean on how npm happens to lay out node_modules.
 */
export type LanguageModelV3 = Extract<LanguageModel, { specificationVersion: 'v3' }>;
export type LanguageModelV3CallOptions = Parameters<LanguageModelV3['doGenerate']>[0];
export type LanguageModelV3GenerateResult = Awaited<ReturnType<LanguageModelV3['doGenerate']>>;
export type LanguageModelV3Content = LanguageModelV3GenerateResult['content'][number];
export type LanguageModelV3StreamResult = Awaited<ReturnType<LanguageModelV3['doStream']>>;
export type LanguageModelV3StreamPart = LanguageModelV3StreamResult['stream'] extends ReadableStream<infer P> ? P : never;
