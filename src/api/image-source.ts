// The three image sources of a removal request (api-spec: exactly one per request), as parsed.
export type ImageSource =
  | { kind: 'file'; data: Buffer }
  | { kind: 'base64'; data: Buffer }
  | { kind: 'url'; url: string };
