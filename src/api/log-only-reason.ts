// The reason behind an error whose message to the client is generic on purpose (an image_url refused for its
// address must not tell the caller what a host resolves to): carried as the error's cause, so the server's log
// has it (server/error-reply.ts) and the answer does not.

export class LogOnlyReason extends Error {}
