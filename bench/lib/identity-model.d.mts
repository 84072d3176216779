export function writeIdentityModel(path: string, inputName?: string, outputName?: string): void;
export function varint(value: number): Buffer;
export function int(field: number, value: number): Buffer;
export function bytes(field: number, value: Buffer | string): Buffer;
/** ValueInfoProto of a float tensor of the given shape. */
export function tensorInfo(name: string, shape: number[]): Buffer;
/** A ModelProto (IR 8, opset 13) around a GraphProto. */
export function model(graph: Buffer): Buffer;
