// The OpenAPI 3.1 document of the API (served at GET /v1.0/openapi.json), generated from the option schema, the
// error table, the media types, the body limits and the header names, so it cannot drift from the code.

import { ERRORS, wireErrorCodes, type ErrorCode } from './errors.js';
import { LIMITS } from './limits.js';
import { OPTION_FIELDS, SOURCE_FIELDS, UNSUPPORTED_FIELDS, type OptionField, type SourceField } from './options.js';
import {
  API_FORMAT_NAMES,
  AUTO_FORMAT,
  OUTPUT_FORMATS,
  REQUEST_ENCODINGS,
  type RequestEncoding,
} from './media-types.js';
import { MAX_BASE64_CHARS } from './request-limits.js';
import { HEADERS, HEADER_DESCRIPTIONS, type HeaderName } from './response-headers.js';

type Schema = Record<string, unknown>;

export const API_VERSION = '1.0.0';

const SOURCE_SCHEMAS: Record<SourceField, Schema> = {
  image_file: {
    type: 'string',
    contentMediaType: 'application/octet-stream',
    description: `The image file (JPG, PNG or WebP, at most ${LIMITS.maxImageBytes} bytes); multipart/form-data only.`,
  },
  image_url: {
    type: 'string',
    format: 'uri',
    description: 'Public, direct HTTPS URL on port 443; redirects and private or loopback addresses are rejected.',
  },
  image_file_b64: {
    type: 'string',
    contentEncoding: 'base64',
    maxLength: MAX_BASE64_CHARS,
    description: `Plain padded base64 of the image, at most ${LIMITS.maxImageBytes} bytes decoded; no data-URL prefix, no line breaks.`,
  },
};

/** What a client shows of each output format (the web page builds its choices from it): the output formats'
 * table (api/media-types.ts) as far as a client needs it, and what `auto` chooses. */
export function outputFormatsExtension(): Schema {
  return {
    'x-output-formats': Object.fromEntries(
      API_FORMAT_NAMES.map((format) => {
        const { title, mimeType, extension, keepsAlpha } = OUTPUT_FORMATS[format];
        return [format, { title, mediaType: mimeType, extension, keepsAlpha }];
      }),
    ),
    'x-auto-format': AUTO_FORMAT,
  };
}

function optionSchema(field: OptionField): Schema {
  switch (field.kind) {
    case 'enum':
      return {
        type: 'string',
        enum: [...field.values],
        ...(field.default === undefined ? {} : { default: field.default }),
        description: field.description,
        ...(field.name === 'format' ? outputFormatsExtension() : {}),
      };
    case 'boolean':
      // Forms can only send strings; JSON bodies may send a boolean.
      return {
        type: ['boolean', 'string'],
        default: field.default,
        description: `${field.description} In forms: true or false.`,
      };
    case 'color':
      return { type: 'string', description: field.description };
  }
}

const UNSUPPORTED_SCHEMA: Schema = {
  enum: ['', null],
  description:
    'Not supported by this service: an empty value is ignored, any other value gets 400 unsupported_parameter.',
};

function requestBodySchema(encoding: RequestEncoding): Schema {
  const sources = SOURCE_FIELDS.filter((name) => encoding === 'multipart' || name !== 'image_file');
  return {
    type: 'object',
    properties: {
      ...Object.fromEntries(sources.map((name) => [name, SOURCE_SCHEMAS[name]])),
      ...Object.fromEntries(OPTION_FIELDS.map((field) => [field.name, optionSchema(field)])),
      ...Object.fromEntries(UNSUPPORTED_FIELDS.map((name) => [name, UNSUPPORTED_SCHEMA])),
    },
    additionalProperties: false,
    oneOf: sources.map((name) => ({ required: [name] })),
    description: `Exactly one of ${sources.join(', ')}. Each field at most once; empty values count as absent.`,
  };
}

function statusesOf(codes: ErrorCode[]): number[] {
  return [...new Set(codes.map((code) => ERRORS[code].status))].sort((a, b) => a - b);
}

function headerRef(name: HeaderName): Schema {
  return { $ref: `#/components/headers/${HEADERS[name]}` };
}

function errorResponse(status: number): Schema {
  const codes = wireErrorCodes().filter((code) => ERRORS[code].status === status);
  // The table's retryAfter column is also what lets src/server send the header: declared iff it can be sent.
  const retry = codes.some((code) => ERRORS[code].retryAfter);
  return {
    description: codes.map((code) => `${code}: ${ERRORS[code].title}`).join('; '),
    headers: {
      [HEADERS.requestId]: headerRef('requestId'),
      ...(retry ? { [HEADERS.retryAfter]: headerRef('retryAfter') } : {}),
      // Errors after authentication carry the caller's window too (src/server renders the error's rate limit).
      ...Object.fromEntries(
        (['rateLimitLimit', 'rateLimitRemaining', 'rateLimitReset'] as const).map((name) => [
          HEADERS[name],
          headerRef(name),
        ]),
      ),
    },
    content: {
      'application/json': {
        schema: {
          allOf: [{ $ref: '#/components/schemas/ErrorBody' }],
          properties: { errors: { items: { properties: { code: { enum: codes } } } } },
        },
      },
    },
  };
}

function errorResponses(statuses: number[]): Schema {
  return Object.fromEntries(
    statuses.map((status) => [String(status), { $ref: `#/components/responses/Error${status}` }]),
  );
}

const RESULT_FIELDS = [
  'result_width',
  'result_height',
  'credits_charged',
  'foreground_top',
  'foreground_left',
  'foreground_width',
  'foreground_height',
] as const;

/** The document: its info, its three paths and their shared components, each built below. */
export function openApiDocument(): Schema {
  return {
    openapi: '3.1.0',
    info: {
      title: 'Background Removal API (rmbg)',
      version: API_VERSION,
      description: `Removes the background of one image per request, synchronously. Recommended client timeout: ${LIMITS.clientTimeoutMs / 1000} s.`,
    },
    servers: [{ url: '/' }],
    security: [{ apiKey: [] }],
    paths: {
      '/v1.0/removebg': removeBackgroundPath(),
      '/v1.0/account': accountPath(),
      '/v1.0/openapi.json': openApiPath(),
    },
    components: components(),
  };
}

/** The headers of a successful removal: its result, its request, the rate-limit window, a replay. */
const SUCCESS_HEADERS = (
  [
    'width',
    'height',
    'creditsCharged',
    'requestId',
    'foregroundTop',
    'foregroundLeft',
    'foregroundWidth',
    'foregroundHeight',
    'confidence',
    'rateLimitLimit',
    'rateLimitRemaining',
    'rateLimitReset',
    'replayed',
  ] as const
).map((name) => [HEADERS[name], headerRef(name)]);

/** The headers of every answer after authentication: the request and the rate-limit window. */
const RATE_HEADERS = (['requestId', 'rateLimitLimit', 'rateLimitRemaining', 'rateLimitReset'] as const).map((name) => [
  HEADERS[name],
  headerRef(name),
]);

/** The statuses POST /v1.0/removebg may answer with: every error's but routing's (404, 405). */
function removeBackgroundStatuses(): number[] {
  const routing = statusesOf(['not_found', 'method_not_allowed']);
  return statusesOf(wireErrorCodes()).filter((status) => !routing.includes(status));
}

/** POST /v1.0/removebg: its headers, its three request encodings, its image or JSON answer and its errors. */
function removeBackgroundPath(): Schema {
  return {
    post: {
      operationId: 'removeBackground',
      summary: 'Remove the background of one image',
      parameters: [
        {
          name: HEADERS.idempotencyKey,
          in: 'header',
          required: false,
          description: HEADER_DESCRIPTIONS.idempotencyKey,
          schema: { type: 'string', minLength: 1, maxLength: LIMITS.maxIdempotencyKeyLength },
        },
        {
          name: 'Accept',
          in: 'header',
          required: false,
          description: 'application/json returns the JSON result; anything else returns image bytes.',
          schema: { type: 'string' },
        },
      ],
      requestBody: {
        required: true,
        content: Object.fromEntries(
          (Object.keys(REQUEST_ENCODINGS) as RequestEncoding[]).map((encoding) => [
            REQUEST_ENCODINGS[encoding],
            { schema: { $ref: `#/components/schemas/RemoveRequest_${encoding}` } },
          ]),
        ),
      },
      responses: {
        '200': {
          description: 'The image with its background removed.',
          headers: Object.fromEntries(SUCCESS_HEADERS),
          content: {
            ...Object.fromEntries(
              API_FORMAT_NAMES.map((format) => OUTPUT_FORMATS[format]).map(({ mimeType }) => [
                mimeType,
                { schema: { type: 'string', contentMediaType: mimeType } },
              ]),
            ),
            'application/json': { schema: { $ref: '#/components/schemas/RemoveResult' } },
          },
        },
        ...errorResponses(removeBackgroundStatuses()),
      },
    },
  };
}

/** GET /v1.0/account: the account record. */
function accountPath(): Schema {
  return {
    get: {
      operationId: 'getAccount',
      summary: 'Credit balance of the account of the API key',
      responses: {
        '200': {
          description: 'The account record.',
          headers: Object.fromEntries(RATE_HEADERS),
          content: { 'application/json': { schema: { $ref: '#/components/schemas/Account' } } },
        },
        ...errorResponses(statusesOf(['invalid_api_key', 'rate_limited', 'internal_error', 'service_busy'])),
      },
    },
  };
}

/** GET /v1.0/openapi.json: this document, without authentication. */
function openApiPath(): Schema {
  return {
    get: {
      operationId: 'getOpenApi',
      summary: 'This document',
      security: [],
      responses: {
        '200': {
          description: 'OpenAPI 3.1 document',
          content: { 'application/json': { schema: { type: 'object' } } },
        },
      },
    },
  };
}

/** What the paths refer to: the API key's scheme, the headers, the schemas (requests, result, account, error) and
 * one error answer per status. */
function components(): Schema {
  return {
    securitySchemes: {
      apiKey: { type: 'apiKey', in: 'header', name: HEADERS.apiKey, description: HEADER_DESCRIPTIONS.apiKey },
    },
    headers: Object.fromEntries(
      (Object.keys(HEADERS) as HeaderName[])
        .filter((name) => name !== 'apiKey' && name !== 'idempotencyKey')
        .map((name) => [HEADERS[name], { description: HEADER_DESCRIPTIONS[name], schema: { type: 'string' } }]),
    ),
    schemas: {
      ...Object.fromEntries(
        (Object.keys(REQUEST_ENCODINGS) as RequestEncoding[]).map((encoding) => [
          `RemoveRequest_${encoding}`,
          requestBodySchema(encoding),
        ]),
      ),
      RemoveResult: {
        type: 'object',
        description: `The spec's fields only; the cutout's confidence is in the ${HEADERS.confidence} header.`,
        required: ['data'],
        additionalProperties: false,
        properties: {
          data: {
            type: 'object',
            required: ['result_b64', ...RESULT_FIELDS],
            additionalProperties: false,
            properties: {
              result_b64: { type: 'string', contentEncoding: 'base64' },
              ...Object.fromEntries(RESULT_FIELDS.map((name) => [name, { type: 'integer', minimum: 0 }])),
            },
          },
        },
      },
      Account: {
        type: 'object',
        required: ['data'],
        properties: {
          data: {
            type: 'object',
            required: ['attributes'],
            properties: {
              attributes: {
                type: 'object',
                required: ['credits', 'api'],
                properties: {
                  credits: {
                    type: 'object',
                    required: ['total', 'subscription', 'payg', 'enterprise'],
                    properties: {
                      total: { type: 'integer', minimum: 0 },
                      subscription: { type: 'integer', minimum: 0 },
                      payg: {
                        type: 'integer',
                        minimum: 0,
                        description: 'All credits that are not subscription credits.',
                      },
                      enterprise: { const: 0 },
                    },
                  },
                  api: {
                    type: 'object',
                    required: ['free_calls', 'sizes'],
                    properties: { free_calls: { const: 0 }, sizes: { const: 'all' } },
                  },
                },
              },
            },
          },
        },
      },
      ErrorBody: {
        type: 'object',
        required: ['errors'],
        properties: {
          errors: {
            type: 'array',
            minItems: 1,
            items: {
              type: 'object',
              required: ['title', 'code'],
              properties: {
                title: { type: 'string' },
                code: { type: 'string', enum: wireErrorCodes() },
                detail: { type: 'string', description: 'What was wrong and what is allowed.' },
              },
            },
          },
        },
      },
    },
    responses: Object.fromEntries(
      statusesOf(wireErrorCodes()).map((status) => [`Error${status}`, errorResponse(status)]),
    ),
  };
}
