// `rmbg remove --local --model NAME` with a catalogue model not pulled yet: at a terminal, ask to pull it now;
// elsewhere (a script, CI) the engine refuses with model_not_pulled and the exact `rmbg models pull` command.

import { dataDirOf } from '../config/setting-rules.js';
import { catalogueModel, pullTerms } from '../engine/model/catalogue.js';
import { readUserModels, userModelsDirOf } from '../engine/model/user-models.js';
import { ask } from './plan-batch.js';

/** Pulls `name` first when it is a catalogue model not pulled yet and the person at the terminal says yes. */
export async function offerToPull(name: string | undefined): Promise<void> {
  if (!name || !process.stdin.isTTY || !process.stderr.isTTY) return;
  const model = catalogueModel(name);
  if (!model) return;
  if (readUserModels(userModelsDirOf(dataDirOf(undefined))).some((m) => m.name === name)) return;
  if (!(await ask(`rmbg: model ${name} is not pulled yet: pull it now? (${pullTerms(model)}) [y/N] `))) return;
  const { pullByName } = await import('./commands/models-pull.js');
  await pullByName(name, {});
}
