// A store URL as it may be shown (logs, `rmbg keys … --json`, `rmbg doctor`): its password replaced in every
// form it may take, in the authority (user:password@) or as a query parameter (password=, sslpassword=).
// Textual, not new URL(): libpq's forms that are no WHATWG URL (a socket folder as ?host=) are redacted too, and so
// is a password that holds @ / : ? or # unencoded (no URL at all): up to the URL's last @, so none of it shows.

export function redactedStoreUrl(url: string): string {
  return url
    .replace(/^([a-z][a-z0-9+.-]*:\/\/[^:@/?#]*:).*@/i, '$1***@')
    .replace(/([?&](?:ssl)?password=)[^&#]*/gi, '$1***');
}
