import { create, fromBinary, toBinary, type DescEnum, type DescFile, type DescMessage, type MessageInitShape } from '@bufbuild/protobuf';
import { FileDescriptorProtoSchema } from '@bufbuild/protobuf/wkt';
import { Code, type ConnectRouter, type HandlerContext } from '@connectrpc/connect';
import { file_google_rpc_error_details } from '../../gen/google/rpc/error_details_pb.js';
import { file_google_rpc_status } from '../../gen/google/rpc/status_pb.js';
import {
  ServerReflection,
  ServerReflectionResponseSchema,
  ServerReflectionRequestSchema,
  type ServerReflectionRequest,
  type ServerReflectionResponse,
} from '../../gen/grpc/reflection/v1/reflection_pb.js';
import * as v1alpha from '../../gen/grpc/reflection/v1alpha/reflection_pb.js';
import { abortable, streamSignal } from '../transport/shutdown-signal.js';

/**
 * Files described even though no served service imports them: errors carry google.rpc details
 * packed in Any, and tools such as grpcurl resolve those types by name through reflection.
 */
const ALWAYS_DESCRIBED: readonly DescFile[] = [file_google_rpc_status, file_google_rpc_error_details];

/**
 * grpc.reflection.v1 and v1alpha ServerReflectionInfo, so grpcurl, buf curl and grpcui can call the
 * server without .proto files. connect-es has no reflection of its own; this one answers from the
 * descriptors protoc-gen-es embeds in src/gen (no source comments: they are not embedded).
 *
 * The services listed are the ones registered on `router`, read at the first request, so register
 * this alongside the others in the same `routes` function; order does not matter. A
 * file_containing_symbol or file_by_filename answer holds the file and all its transitive
 * dependencies, well-known types included, so a client can build a pool from one answer.
 * Extensions: Waymark defines none, so file_containing_extension is NOT_FOUND and
 * all_extension_numbers_of_type is an empty list for a known message.
 */
export function registerReflectionService(router: ConnectRouter, options: { files?: readonly DescFile[] } = {}): void {
  let index: DescriptorIndex | undefined;
  const getIndex = (): DescriptorIndex => (index ??= new DescriptorIndex(router, [...ALWAYS_DESCRIBED, ...(options.files ?? [])]));

  async function* serve(requests: AsyncIterable<ServerReflectionRequest>, ctx: HandlerContext): AsyncIterable<ServerReflectionResponse> {
    const signal = streamSignal(ctx);
    const it = requests[Symbol.asyncIterator]();
    for (;;) {
      const next = await abortable(it.next(), signal);
      if (next.done === true) return;
      yield getIndex().answer(next.value);
    }
  }

  router.service(ServerReflection, { serverReflectionInfo: serve });

  // v1alpha has the same messages under another package, field for field, so its requests are
  // re-read as v1 and the answers re-read as v1alpha: one implementation, identical behaviour.
  router.service(v1alpha.ServerReflection, {
    async *serverReflectionInfo(requests, ctx) {
      const asV1 = async function* () {
        for await (const req of requests) {
          yield fromBinary(ServerReflectionRequestSchema, toBinary(v1alpha.ServerReflectionRequestSchema, req));
        }
      };
      for await (const res of serve(asV1(), ctx)) {
        yield fromBinary(v1alpha.ServerReflectionResponseSchema, toBinary(ServerReflectionResponseSchema, res));
      }
    },
  });
}

/** Every file and symbol the server can describe, from the services on a router. */
class DescriptorIndex {
  readonly services: string[];
  readonly #files = new Map<string, DescFile>();
  readonly #symbols = new Map<string, DescFile>();
  readonly #messages = new Set<string>();
  readonly #encoded = new Map<DescFile, Uint8Array>();

  constructor(router: ConnectRouter, extraFiles: readonly DescFile[]) {
    const services = new Map(router.handlers.map((h) => [h.service.typeName, h.service]));
    this.services = [...services.keys()].sort();
    for (const service of services.values()) this.#addFile(service.file);
    for (const file of extraFiles) this.#addFile(file);
  }

  answer(req: ServerReflectionRequest): ServerReflectionResponse {
    const reply = (messageResponse: MessageInitShape<typeof ServerReflectionResponseSchema>['messageResponse']): ServerReflectionResponse =>
      create(ServerReflectionResponseSchema, { validHost: req.host, originalRequest: req, messageResponse });
    const notFound = (message: string): ServerReflectionResponse =>
      reply({ case: 'errorResponse', value: { errorCode: Code.NotFound, errorMessage: message } });
    const files = (file: DescFile): ServerReflectionResponse =>
      reply({ case: 'fileDescriptorResponse', value: { fileDescriptorProto: this.#withDependencies(file) } });

    const request = req.messageRequest;
    switch (request.case) {
      case 'listServices':
        return reply({ case: 'listServicesResponse', value: { service: this.services.map((name) => ({ name })) } });
      case 'fileByFilename': {
        const file = this.#files.get(request.value);
        return file ? files(file) : notFound(`file "${request.value}" is not known to this server`);
      }
      case 'fileContainingSymbol': {
        const file = this.#symbols.get(request.value);
        return file ? files(file) : notFound(`symbol "${request.value}" is not known to this server`);
      }
      case 'fileContainingExtension':
        return notFound(`no extension of "${request.value.containingType}" is known to this server`);
      case 'allExtensionNumbersOfType':
        return this.#messages.has(request.value)
          ? reply({ case: 'allExtensionNumbersResponse', value: { baseTypeName: request.value, extensionNumber: [] } })
          : notFound(`message type "${request.value}" is not known to this server`);
      case undefined:
        return reply({
          case: 'errorResponse',
          value: { errorCode: Code.InvalidArgument, errorMessage: 'the request names no reflection query' },
        });
    }
  }

  /** The file first, then its transitive dependencies, each once, serialized. */
  #withDependencies(root: DescFile): Uint8Array[] {
    const seen = new Set<DescFile>();
    const visit = (file: DescFile): void => {
      if (seen.has(file)) return;
      seen.add(file);
      file.dependencies.forEach(visit);
    };
    visit(root);
    return [...seen].map((file) => this.#encode(file));
  }

  #encode(file: DescFile): Uint8Array {
    let bytes = this.#encoded.get(file);
    if (!bytes) {
      bytes = toBinary(FileDescriptorProtoSchema, file.proto);
      this.#encoded.set(file, bytes);
    }
    return bytes;
  }

  #addFile(file: DescFile): void {
    if (this.#files.has(file.proto.name)) return;
    this.#files.set(file.proto.name, file);
    for (const service of file.services) {
      this.#symbols.set(service.typeName, file);
      for (const method of service.methods) this.#symbols.set(`${service.typeName}.${method.name}`, file);
    }
    file.messages.forEach((message) => this.#addMessage(file, message));
    file.enums.forEach((e) => this.#addEnum(file, e));
    for (const ext of file.extensions) this.#symbols.set(ext.typeName, file);
    file.dependencies.forEach((dep) => this.#addFile(dep));
  }

  #addMessage(file: DescFile, message: DescMessage): void {
    this.#symbols.set(message.typeName, file);
    this.#messages.add(message.typeName);
    for (const field of message.fields) this.#symbols.set(`${message.typeName}.${field.name}`, file);
    for (const oneof of message.oneofs) this.#symbols.set(`${message.typeName}.${oneof.name}`, file);
    for (const ext of message.nestedExtensions) this.#symbols.set(ext.typeName, file);
    message.nestedMessages.forEach((nested) => this.#addMessage(file, nested));
    message.nestedEnums.forEach((nested) => this.#addEnum(file, nested));
  }

  #addEnum(file: DescFile, e: DescEnum): void {
    this.#symbols.set(e.typeName, file);
    // Enum values are scoped like C++ enumerators: siblings of their enum, not children of it.
    const scope = e.typeName.includes('.') ? `${e.typeName.slice(0, e.typeName.lastIndexOf('.'))}.` : '';
    for (const value of e.values) this.#symbols.set(`${scope}${value.name}`, file);
  }
}
