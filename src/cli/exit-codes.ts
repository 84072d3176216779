// Exit codes of every command: 0 success, 1 some work failed, 2 usage error, 130 interrupted (resumable).
export const EXIT = { ok: 0, failed: 1, usage: 2, interrupted: 130 } as const;
