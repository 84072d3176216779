// What createServer() takes and gives. Its options are the rows of src/settings (SERVE_TABLE); nothing heavy is
// imported here.

import type { DeviceReport } from '../api/device.js';
import type { SERVE_TABLE } from '../settings/index.js';
import type { OptionsOf } from '../settings/setting.js';

/** The options of createServer(): the flags of `rmbg serve`, camelCased, from the tables in src/settings. */
export type ServerOptions = OptionsOf<typeof SERVE_TABLE>;

export interface RmbgServer {
  /** e.g. http://127.0.0.1:5000 (the real port when port 0 was asked for). */
  url: string;
  /** Where the model runs, and why. */
  device: DeviceReport;
  /** Stops accepting, lets requests in flight finish, then releases the model, the store and the data directory. */
  close(): Promise<void>;
  [Symbol.asyncDispose](): Promise<void>;
}
