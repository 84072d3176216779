// A worker thread's stdout goes to the process's stderr: stdout is the CLI's own (--json lines, a cutout written to
// `-`), and a library in a worker prints there (libheif-js: "Decoding image failed…", issue #38). Patched on the
// stream, so console.log and direct writes both follow; a worker calls it before it loads any such library.

export function sendStdoutToStderr(): void {
  process.stdout.write = process.stderr.write.bind(process.stderr) as typeof process.stdout.write;
}
