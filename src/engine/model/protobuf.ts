// A minimal protocol-buffers reader/writer: enough to edit an ONNX ModelProto without a schema compiler.
// A message is read as an ordered list of fields; fields we do not touch are written back byte for byte,
// so an edit changes only what it means to change, and the same input always gives the same output.

export const WIRE = { varint: 0, fixed64: 1, bytes: 2, fixed32: 5 } as const;

/** A field as decode() reads it: a Number for varints, a Buffer view (no copy) for the other wire types. */
export interface Field {
  field: number;
  wire: number;
  value: number | Buffer;
}

/** A field to encode: a value may also be a string (bytes) or a field list (a message). */
export interface OutField {
  field: number;
  wire: number;
  value: number | Buffer | string | OutField[];
}

/** Reads a varint at `pos`; returns [value as a Number (exact below 2^53), next position]. */
function readVarint(buf: Buffer, pos: number): [number, number] {
  let value = 0;
  let scale = 1;
  let at = pos;
  for (;;) {
    const byte = buf[at++];
    if (byte === undefined) throw new Error('truncated varint');
    value += (byte & 0x7f) * scale;
    if (byte < 0x80) return [value, at];
    scale *= 128;
  }
}

function varint(value: number): Buffer {
  const bytes: number[] = [];
  let rest = value;
  while (rest > 0x7f) {
    bytes.push((rest % 128) | 0x80);
    rest = Math.floor(rest / 128);
  }
  bytes.push(rest);
  return Buffer.from(bytes);
}

/** Splits a message into its fields, in order. */
export function decode(buf: Buffer): Field[] {
  const fields: Field[] = [];
  let pos = 0;
  while (pos < buf.length) {
    let key: number;
    [key, pos] = readVarint(buf, pos);
    const field = Math.floor(key / 8);
    const wire = key % 8;
    let value: number | Buffer;
    if (wire === WIRE.varint) [value, pos] = readVarint(buf, pos);
    else if (wire === WIRE.bytes) {
      let length: number;
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

/** Serialises fields as decode() returns them, or as OutField allows. */
export function encode(fields: readonly OutField[]): Buffer {
  const parts: Buffer[] = [];
  for (const { field, wire, value } of fields) {
    parts.push(varint(field * 8 + wire));
    if (typeof value === 'number') parts.push(varint(value));
    else if (wire === WIRE.bytes) {
      const bytes = Array.isArray(value) ? encode(value) : typeof value === 'string' ? Buffer.from(value) : value;
      parts.push(varint(bytes.length), bytes);
    } else parts.push(value as Buffer);
  }
  return Buffer.concat(parts);
}

/** The bytes of a length-delimited field. */
export const bytesOf = (f: Field): Buffer => {
  if (typeof f.value === 'number') throw new Error(`field ${f.field} is a varint, not bytes`);
  return f.value;
};

export const str = (fields: readonly Field[], n: number): string[] =>
  fields.filter((f) => f.field === n).map((f) => bytesOf(f).toString('utf8'));

/** The first field `n`'s value: a number (varint) or a Buffer. */
export const one = (fields: readonly Field[], n: number): number | Buffer | undefined =>
  fields.find((f) => f.field === n)?.value;

/** The first field `n` as a number (a varint), or undefined. */
export const numberOf = (fields: readonly Field[], n: number): number | undefined => {
  const value = one(fields, n);
  return typeof value === 'number' ? value : undefined;
};

/** The first field `n` as bytes (a message or string), or undefined. */
export const messageOf = (fields: readonly Field[], n: number): Buffer | undefined => {
  const value = one(fields, n);
  return Buffer.isBuffer(value) ? value : undefined;
};

/** Repeated varint field, packed or not. */
export function varints(fields: readonly Field[], n: number): number[] {
  const out: number[] = [];
  for (const f of fields.filter((x) => x.field === n)) {
    if (typeof f.value === 'number') out.push(f.value);
    else
      for (let pos = 0; pos < f.value.length; ) {
        let v: number;
        [v, pos] = readVarint(f.value, pos);
        out.push(v);
      }
  }
  return out;
}
