// A minimal protocol-buffers reader/writer: enough to edit an ONNX ModelProto without a schema compiler.
// A message is read as an ordered list of fields; fields we do not touch are written back byte for byte,
// so an edit changes only what it means to change, and the same input always gives the same output.

const WIRE = { varint: 0, fixed64: 1, bytes: 2, fixed32: 5 };
export { WIRE };

/** Reads a varint at `pos`; returns [value as a Number (exact below 2^53), next position]. */
function readVarint(buf, pos) {
  let value = 0;
  let scale = 1;
  for (;;) {
    const byte = buf[pos++];
    if (byte === undefined) throw new Error('truncated varint');
    value += (byte & 0x7f) * scale;
    if (byte < 0x80) return [value, pos];
    scale *= 128;
  }
}

function varint(value) {
  const bytes = [];
  let rest = value;
  while (rest > 0x7f) {
    bytes.push((rest % 128) | 0x80);
    rest = Math.floor(rest / 128);
  }
  bytes.push(rest);
  return Buffer.from(bytes);
}

/**
 * Splits a message into its fields, in order. `value` is a Number for varints, a Buffer view (no copy) for
 * length-delimited and fixed-width fields.
 */
export function decode(buf) {
  const fields = [];
  let pos = 0;
  while (pos < buf.length) {
    let key;
    [key, pos] = readVarint(buf, pos);
    const field = Math.floor(key / 8);
    const wire = key % 8;
    let value;
    if (wire === WIRE.varint) [value, pos] = readVarint(buf, pos);
    else if (wire === WIRE.bytes) {
      let length;
      [length, pos] = readVarint(buf, pos);
      value = buf.subarray(pos, pos + length);
      pos += length;
    } else if (wire === WIRE.fixed64) {
      value = buf.subarray(pos, pos + 8);
      pos += 8;
    } else if (wire === WIRE.fixed32) {
      value = buf.subarray(pos, pos + 4);
      pos += 4;
    } else throw new Error(`unsupported wire type ${wire}`);
    fields.push({ field, wire, value });
  }
  return fields;
}

/** Serialises fields as decode() returns them; a `value` may also be a string (bytes) or a field list (a message). */
export function encode(fields) {
  const parts = [];
  for (const { field, wire, value } of fields) {
    parts.push(varint(field * 8 + wire));
    if (wire === WIRE.varint) parts.push(varint(value));
    else if (wire === WIRE.bytes) {
      const bytes = Array.isArray(value) ? encode(value) : typeof value === 'string' ? Buffer.from(value) : value;
      parts.push(varint(bytes.length), bytes);
    } else parts.push(value);
  }
  return Buffer.concat(parts);
}

export const str = (fields, n) => fields.filter((f) => f.field === n).map((f) => f.value.toString('utf8'));
export const one = (fields, n) => fields.find((f) => f.field === n)?.value;

/** Repeated varint field, packed or not. */
export function varints(fields, n) {
  const out = [];
  for (const f of fields.filter((x) => x.field === n)) {
    if (f.wire === WIRE.varint) out.push(f.value);
    else
      for (let pos = 0; pos < f.value.length; ) {
        let v;
        [v, pos] = readVarint(f.value, pos);
        out.push(v);
      }
  }
  return out;
}
