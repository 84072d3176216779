// The settings tables of each entry point, joined from the families: what `rmbg serve` and createServer() take,
// and what `rmbg remove` and the library's removeBackground() / removeBackgrounds() take besides image options.

import { ENGINE_SETTINGS } from './engine.js';
import { BATCH_SETTINGS, CALL_SETTINGS } from './remove.js';
import { SERVER_SETTINGS } from './server.js';
import { joinTables } from './setting.js';

export { ENGINE_SETTINGS } from './engine.js';
export { BATCH_SETTINGS, CALL_SETTINGS } from './remove.js';
export { SERVER_SETTINGS } from './server.js';

/** `rmbg serve`'s flags and createServer()'s options. */
export const SERVE_TABLE = joinTables(SERVER_SETTINGS, ENGINE_SETTINGS);
/** One image: removeBackground()'s options besides the image options. */
export const CALL_TABLE = joinTables(CALL_SETTINGS, ENGINE_SETTINGS);
/** A folder run: `rmbg remove`'s flags besides the image options, and removeBackgrounds()'s options. */
export const REMOVE_TABLE = joinTables(BATCH_SETTINGS, CALL_TABLE);
