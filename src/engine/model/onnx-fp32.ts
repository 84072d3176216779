// Derives an fp32 ONNX graph from an fp16 one (IMG.LY's isnet-medium): every FLOAT16 tensor becomes FLOAT,
// the Cast nodes between the two disappear (their consumers read the Cast's input instead), and graph outputs
// rmbg never reads are dropped together with the nodes and weights only they needed.
// Why: on the CPU provider an fp16 graph computes in fp32 anyway, with a conversion around every kernel; the
// fp32 copy runs faster and its first runs are much cheaper (bench/RESULTS.md). Deterministic: the same input
// bytes give the same output bytes, so the result's sha256 can be pinned in models/manifest.json.
import { type OutField, WIRE, bytesOf, decode, encode, messageOf, numberOf, str, varints } from './protobuf.js';

const FLOAT = 1;
const FLOAT16 = 10;
const FLOAT_TYPES: ReadonlySet<number | undefined> = new Set([FLOAT, FLOAT16]);

// ModelProto / GraphProto / NodeProto / TensorProto / AttributeProto / ValueInfoProto field numbers (onnx.proto3).
const MODEL = { graph: 7, metadata: 14 };
const GRAPH = { node: 1, initializer: 5, input: 11, output: 12, valueInfo: 13 };
const NODE = { input: 1, output: 2, opType: 4, attribute: 5 };
const TENSOR = { dataType: 2, int32Data: 5, name: 8, rawData: 9 };
const ATTR = { name: 1, i: 3, t: 5 };

let halfTable: Float32Array | undefined;
/** All 65,536 half-precision values as floats (IEEE 754 binary16 → binary32, subnormals and Inf/NaN included). */
function halfToFloatTable(): Float32Array {
  if (halfTable) return halfTable;
  halfTable = new Float32Array(65536);
  for (let h = 0; h < 65536; h++) {
    const sign = h & 0x8000 ? -1 : 1;
    const exponent = (h >> 10) & 0x1f;
    const fraction = h & 0x3ff;
    if (exponent === 0) halfTable[h] = sign * 2 ** -14 * (fraction / 1024);
    else if (exponent === 31) halfTable[h] = fraction ? Number.NaN : sign * Number.POSITIVE_INFINITY;
    else halfTable[h] = sign * 2 ** (exponent - 15) * (1 + fraction / 1024);
  }
  return halfTable;
}

/** A FLOAT16 TensorProto (raw_data or int32_data) as a FLOAT one with raw_data; other tensors unchanged. */
function tensorToFloat(tensorBytes: Buffer): Buffer {
  const fields = decode(tensorBytes);
  if (numberOf(fields, TENSOR.dataType) !== FLOAT16) return tensorBytes;
  const table = halfToFloatTable();
  const raw = messageOf(fields, TENSOR.rawData);
  const halves = raw ? undefined : varints(fields, TENSOR.int32Data);
  const count = raw ? raw.length / 2 : (halves as number[]).length;
  const floats = Buffer.alloc(count * 4);
  for (let i = 0; i < count; i++) {
    const half = raw ? raw.readUInt16LE(i * 2) : (halves as number[])[i];
    floats.writeFloatLE(table[half as number] as number, i * 4);
  }
  const kept = fields.filter((f) => f.field !== TENSOR.rawData && f.field !== TENSOR.int32Data);
  return encode([
    ...kept.map((f) => (f.field === TENSOR.dataType ? { ...f, value: FLOAT } : f)),
    { field: TENSOR.rawData, wire: WIRE.bytes, value: floats },
  ]);
}

/** ValueInfoProto with elem_type FLOAT16 retyped FLOAT (TypeProto.tensor_type.elem_type). */
function valueInfoToFloat(infoBytes: Buffer): OutField[] {
  const info = decode(infoBytes);
  return info.map((f) => {
    if (f.field !== 2) return f;
    return {
      ...f,
      value: decode(bytesOf(f)).map((t) =>
        t.field !== 1
          ? t
          : {
              ...t,
              value: decode(bytesOf(t)).map((e) => (e.field === 1 && e.value === FLOAT16 ? { ...e, value: FLOAT } : e)),
            },
      ),
    };
  });
}

const nameOf = (messageBytes: Buffer, field: number): string | undefined => str(decode(messageBytes), field)[0];

export interface Fp32Stats {
  nodes: number;
  nodesBefore: number;
  castsRemoved: number;
  castsRetargeted: number;
  convertedInitializers: number;
  initializers: number;
}

/** `source`: the fp16 model's bytes; `keepOutputs`: the graph outputs to keep (the others are dropped);
 * `sourceSha256`: recorded in the result's metadata. */
export function convertToFp32(
  source: Buffer,
  { keepOutputs, sourceSha256 }: { keepOutputs: readonly string[]; sourceSha256?: string },
): { bytes: Buffer; stats: Fp32Stats } {
  const model = decode(source);
  const graphBytes = messageOf(model, MODEL.graph);
  if (!graphBytes) throw new Error('the model has no graph');
  const graph = decode(graphBytes);
  const outputs = graph.filter(
    (f) => f.field === GRAPH.output && keepOutputs.includes(nameOf(bytesOf(f), 1) as string),
  );
  if (outputs.length !== keepOutputs.length) throw new Error(`the graph lacks output(s) ${keepOutputs.join(', ')}`);
  const outputNames = new Set(keepOutputs);

  const nodes = graph.filter((f) => f.field === GRAPH.node).map((f) => decode(bytesOf(f)));
  const initializers = graph.filter((f) => f.field === GRAPH.initializer);
  const typeOf = new Map<string | undefined, number | undefined>(
    initializers.map((f) => [nameOf(bytesOf(f), TENSOR.name), numberOf(decode(bytesOf(f)), TENSOR.dataType)]),
  );
  for (const node of nodes) {
    if (str(node, NODE.opType)[0] !== 'Constant') continue;
    const value = node
      .filter((f) => f.field === NODE.attribute)
      .map((f) => decode(bytesOf(f)))
      .find((a) => messageOf(a, ATTR.t));
    const tensor = value && messageOf(value, ATTR.t);
    if (tensor) typeOf.set(str(node, NODE.output)[0], numberOf(decode(tensor), TENSOR.dataType));
  }

  // Casts between float types become aliases; a Cast to a float type from an integer constant is retargeted to FLOAT.
  const alias = new Map<string, string>();
  let castsRemoved = 0;
  let castsRetargeted = 0;
  const kept: OutField[][] = [];
  for (const node of nodes) {
    if (str(node, NODE.opType)[0] === 'Cast') {
      const attrs = node.filter((f) => f.field === NODE.attribute).map((f) => decode(bytesOf(f)));
      const to = attrs.find((a) => str(a, ATTR.name)[0] === 'to');
      const target = to && numberOf(to, ATTR.i);
      const [input] = str(node, NODE.input);
      const [output] = str(node, NODE.output);
      const inputType = typeOf.get(input);
      if (
        input !== undefined &&
        output !== undefined &&
        FLOAT_TYPES.has(target) &&
        (inputType === undefined || FLOAT_TYPES.has(inputType))
      ) {
        // A Cast that produces a kept graph output keeps the output's name: its producer is renamed instead.
        if (outputNames.has(output)) alias.set(input, output);
        else alias.set(output, input);
        castsRemoved++;
        continue;
      }
      if (target === FLOAT16) {
        castsRetargeted++;
        kept.push(
          node.map((f) =>
            f.field === NODE.attribute && str(decode(bytesOf(f)), ATTR.name)[0] === 'to'
              ? { ...f, value: decode(bytesOf(f)).map((a) => (a.field === ATTR.i ? { ...a, value: FLOAT } : a)) }
              : f,
          ),
        );
        continue;
      }
    }
    kept.push(node);
  }
  const resolve = (name: string): string => {
    let current = name;
    for (let hops = 0; alias.has(current); hops++) {
      if (hops > alias.size) throw new Error(`cyclic Cast aliases at ${name}`);
      current = alias.get(current) as string;
    }
    return current;
  };
  const textOf = (f: OutField): string => (Buffer.isBuffer(f.value) ? f.value.toString('utf8') : String(f.value));
  const renamed = kept.map((node) =>
    node.map((f) => {
      if (f.field !== NODE.input && f.field !== NODE.output) return f;
      const name = textOf(f);
      return { ...f, value: Buffer.from(name.length ? resolve(name) : '') };
    }),
  );
  const namesIn = (node: OutField[], n: number) => node.filter((f) => f.field === n).map(textOf);

  // Keep only what the kept outputs need (nodes are in topological order, so one backward pass suffices).
  const needed = new Set<string>(keepOutputs);
  const live: OutField[][] = [];
  for (let i = renamed.length - 1; i >= 0; i--) {
    const node = renamed[i] as OutField[];
    if (!namesIn(node, NODE.output).some((o) => needed.has(o))) continue;
    for (const input of namesIn(node, NODE.input)) if (input) needed.add(input);
    live.unshift(node);
  }
  const produced = new Set(live.flatMap((node) => namesIn(node, NODE.output)));

  let convertedInitializers = 0;
  const graphOut: OutField[] = [];
  const liveNodes: OutField[] = live.map((node) => ({
    field: GRAPH.node,
    wire: WIRE.bytes,
    value: node.map((f) =>
      f.field === NODE.attribute && Buffer.isBuffer(f.value)
        ? {
            ...f,
            value: decode(f.value).map((a) => (a.field === ATTR.t ? { ...a, value: tensorToFloat(bytesOf(a)) } : a)),
          }
        : f,
    ),
  }));
  for (const f of graph) {
    if (f.field === GRAPH.node) {
      // The kept nodes, in their order, where the first node was.
      if (liveNodes.length) graphOut.push(...liveNodes.splice(0));
      continue;
    }
    if (f.field === GRAPH.initializer) {
      if (!needed.has(nameOf(bytesOf(f), TENSOR.name) as string)) continue;
      if (numberOf(decode(bytesOf(f)), TENSOR.dataType) === FLOAT16) convertedInitializers++;
      graphOut.push({ ...f, value: tensorToFloat(bytesOf(f)) });
    } else if (f.field === GRAPH.output) {
      if (outputNames.has(nameOf(bytesOf(f), 1) as string))
        graphOut.push({ ...f, value: valueInfoToFloat(bytesOf(f)) });
    } else if (f.field === GRAPH.valueInfo) {
      if (produced.has(nameOf(bytesOf(f), 1) as string)) graphOut.push({ ...f, value: valueInfoToFloat(bytesOf(f)) });
    } else if (f.field === GRAPH.input) graphOut.push({ ...f, value: valueInfoToFloat(bytesOf(f)) });
    else graphOut.push(f);
  }

  const metadata: OutField[] = sourceSha256
    ? [
        {
          field: MODEL.metadata,
          wire: WIRE.bytes,
          value: [
            { field: 1, wire: WIRE.bytes, value: 'rmbg.derived_from_sha256' },
            { field: 2, wire: WIRE.bytes, value: sourceSha256 },
          ],
        },
      ]
    : [];
  const modelOut: OutField[] = [
    ...model.map((f) => (f.field === MODEL.graph ? { ...f, value: graphOut } : f)),
    ...metadata,
  ];
  return {
    bytes: encode(modelOut),
    stats: {
      nodes: live.length,
      nodesBefore: nodes.length,
      castsRemoved,
      castsRetargeted,
      convertedInitializers,
      initializers: graphOut.filter((f) => f.field === GRAPH.initializer).length,
    },
  };
}
