import type { DescService } from '@bufbuild/protobuf';
import { Code, ConnectError, type ServiceImpl } from '@connectrpc/connect';

/**
 * An implementation of `service` whose every method answers UNIMPLEMENTED, naming the RPC. Connect
 * already answers UNIMPLEMENTED for a method left out of an implementation, but with a message that
 * reads like a client mistake; this one tells the caller the RPC is part of the API and still to come.
 */
export function unimplemented<S extends DescService>(service: S): ServiceImpl<S> {
  const methods = service.methods.map((method) => {
    const error = (): ConnectError =>
      new ConnectError(
        `/${service.typeName}/${method.name} is part of the API but not served yet; it arrives in a later Waymark release`,
        Code.Unimplemented,
      );
    const impl =
      method.methodKind === 'unary' || method.methodKind === 'client_streaming'
        ? () => Promise.reject(error())
        : // eslint-disable-next-line require-yield -- a stream that fails before its first message
          async function* () {
            throw error();
          };
    return [method.localName, impl] as const;
  });
  // The map is keyed by each method's localName and shaped by its kind, which is what ServiceImpl<S> is.
  return Object.fromEntries(methods) as unknown as ServiceImpl<S>;
}
