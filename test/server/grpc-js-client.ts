import * as grpc from '@grpc/grpc-js';
import {
  create,
  fromBinary,
  toBinary,
  type DescMessage,
  type DescMethod,
  type DescMethodBiDiStreaming,
  type DescMethodServerStreaming,
  type DescMethodUnary,
  type MessageInitShape,
  type MessageShape,
} from '@bufbuild/protobuf';

/**
 * Calls the server with @grpc/grpc-js, an implementation independent of Connect, so the tests prove
 * wire compatibility rather than Connect talking to itself. Messages are (de)serialized with the
 * generated protobuf-es schemas; grpc-js only moves bytes.
 */
export function grpcJsClient(address: string): grpc.Client {
  return new grpc.Client(address, grpc.credentials.createInsecure());
}

export function grpcPath(method: DescMethod): string {
  return `/${method.parent.typeName}/${method.name}`;
}

function codec<I extends DescMessage, O extends DescMessage>(method: { input: I; output: O }) {
  return {
    serialize: (message: MessageShape<I>): Buffer => Buffer.from(toBinary(method.input, message)),
    deserialize: (bytes: Buffer): MessageShape<O> => fromBinary(method.output, bytes),
  };
}

export function unaryCall<I extends DescMessage, O extends DescMessage>(
  client: grpc.Client,
  method: DescMethodUnary<I, O>,
  request: MessageInitShape<I>,
  timeoutMs = 10_000,
): Promise<MessageShape<O>> {
  const { serialize, deserialize } = codec(method);
  const options = { deadline: Date.now() + timeoutMs };
  return new Promise((resolve, reject) => {
    client.makeUnaryRequest(grpcPath(method), serialize, deserialize, create(method.input, request), options, (err, res) => {
      if (err) reject(err);
      else resolve(res as MessageShape<O>);
    });
  });
}

export function serverStreamCall<I extends DescMessage, O extends DescMessage>(
  client: grpc.Client,
  method: DescMethodServerStreaming<I, O>,
  request: MessageInitShape<I>,
): StreamReader<MessageShape<O>> {
  const { serialize, deserialize } = codec(method);
  return new StreamReader(client.makeServerStreamRequest(grpcPath(method), serialize, deserialize, create(method.input, request)));
}

export function bidiCall<I extends DescMessage, O extends DescMessage>(
  client: grpc.Client,
  method: DescMethodBiDiStreaming<I, O>,
): { send(request: MessageInitShape<I>): void; end(): void; reader: StreamReader<MessageShape<O>> } {
  const { serialize, deserialize } = codec(method);
  const call = client.makeBidiStreamRequest(grpcPath(method), serialize, deserialize);
  return {
    send: (request) => call.write(create(method.input, request)),
    end: () => call.end(),
    reader: new StreamReader(call),
  };
}

/** Turns a grpc-js stream's events into awaitable messages and a final status. */
export class StreamReader<T> {
  readonly #buffered: T[] = [];
  readonly #waiting: { resolve: (value: T) => void; reject: (err: Error) => void }[] = [];
  #failure: Error | undefined;
  readonly status: Promise<grpc.StatusObject>;

  constructor(readonly call: grpc.ClientReadableStream<T> | grpc.ClientDuplexStream<unknown, T>) {
    call.on('data', (message: T) => {
      const waiter = this.#waiting.shift();
      if (waiter) waiter.resolve(message);
      else this.#buffered.push(message);
    });
    // grpc-js emits 'error' for any non-OK status, and 'status' for every status.
    call.on('error', () => {});
    this.status = new Promise((resolve) => call.on('status', resolve));
    void this.status.then((status) => {
      this.#failure = new Error(`stream ended with status ${status.code}: ${status.details}`);
      for (const waiter of this.#waiting.splice(0)) waiter.reject(this.#failure);
    });
  }

  next(): Promise<T> {
    const message = this.#buffered.shift();
    if (message !== undefined) return Promise.resolve(message);
    if (this.#failure) return Promise.reject(this.#failure);
    return new Promise((resolve, reject) => this.#waiting.push({ resolve, reject }));
  }
}
