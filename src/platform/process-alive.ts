// Whether a process id is running: the one test behind taking over a stale pid lock and removing a graph that a
// dead process left half-written. EPERM means it runs under another user.

export function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}
