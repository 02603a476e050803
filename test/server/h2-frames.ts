/*
 * Raw HTTP/2 frames (RFC 9113 section 4.1), for tests that must send what no HTTP/2 library sends:
 * invalid HPACK, lengths over the peer's limit, frames on the wrong stream.
 */

export const PREFACE = Buffer.from('PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n', 'latin1');

export const FrameType = { DATA: 0, HEADERS: 1, PRIORITY: 2, RST_STREAM: 3, SETTINGS: 4, PING: 6, GOAWAY: 7, WINDOW_UPDATE: 8, CONTINUATION: 9 } as const;

/** A frame: 9-byte header (24-bit length, type, flags, 31-bit stream id) and payload. `length` may lie. */
export function frame(type: number, flags: number, streamId: number, payload: Buffer = Buffer.alloc(0), length = payload.length): Buffer {
  const header = Buffer.alloc(9);
  header.writeUIntBE(length & 0xffffff, 0, 3);
  header[3] = type & 0xff;
  header[4] = flags & 0xff;
  header.writeUInt32BE(streamId >>> 0 & 0x7fffffff, 5);
  return Buffer.concat([header, payload]);
}

/** An empty SETTINGS frame, what a client sends right after the preface. */
export const SETTINGS = frame(FrameType.SETTINGS, 0, 0);

/** The connection errors of issue 16, finding 2, each after a valid preface and SETTINGS. */
export const CONNECTION_ERRORS: Record<string, Buffer> = {
  // HEADERS (END_STREAM|END_HEADERS) whose header block indexes past any table.
  'invalid HPACK': frame(FrameType.HEADERS, 0x5, 1, Buffer.from([0xff, 0xff, 0xff, 0x7f])),
  // A frame header announcing 16 MiB, over the 16 KiB SETTINGS_MAX_FRAME_SIZE.
  'an oversized frame header': frame(FrameType.DATA, 0, 1, Buffer.alloc(0), 0xffffff),
  // DATA on stream 0 is a connection error of type PROTOCOL_ERROR.
  'a protocol error': frame(FrameType.DATA, 0, 0, Buffer.from('x')),
};
