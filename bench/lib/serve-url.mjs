// The URL a spawned `rmbg serve --port 0` prints once it listens ("rmbg: listening on http://HOST:PORT").

/** Resolves with that URL; rejects if the process exits first (`why()` adds what it said, e.g. its stderr). */
export function listeningUrl(child, why = () => '') {
  return new Promise((resolve, reject) => {
    let out = '';
    child.stdout.on('data', (chunk) => {
      out += chunk;
      const match = /listening on (http:\/\/\S+)/.exec(out);
      if (match) resolve(match[1]);
    });
    child.once('exit', (code) =>
      reject(new Error(`rmbg serve exited with ${code} before listening${why() ? `: ${why()}` : ''}`)),
    );
  });
}
