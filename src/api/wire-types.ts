// The values the API carries on the wire, shared by the service that produces them, the server that
// renders them and the client that reads them back.

/** X-RateLimit-*: the caller's per-key window. */
export interface RateLimitInfo {
  limit: number;
  remaining: number;
  /** Seconds until the window resets. */
  resetSeconds: number;
}

/** X-Foreground-*: the foreground box on the normalized (EXIF-oriented) input canvas, in input pixels. */
export interface ForegroundBox {
  top: number;
  left: number;
  width: number;
  height: number;
}

/** GET /v1.0/account's answer. */
export interface AccountRecord {
  data: {
    attributes: {
      credits: { total: number; subscription: number; payg: number; enterprise: 0 };
      api: { free_calls: 0; sizes: 'all' };
    };
  };
}

/** POST /v1.0/removebg's answer when the client asks for JSON (Accept: application/json): the spec's fields only. */
export interface RemoveResultJson {
  data: {
    result_b64: string;
    result_width: number;
    result_height: number;
    credits_charged: number;
    foreground_top: number;
    foreground_left: number;
    foreground_width: number;
    foreground_height: number;
  };
}
