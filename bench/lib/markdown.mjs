// Markdown tables and number formats for the bench report.
export function table(headers, rows) {
  const line = (cells) => `| ${cells.join(' | ')} |`;
  return [line(headers), line(headers.map(() => '---')), ...rows.map(line)].join('\n');
}

export const ms = (value) => (value === undefined ? '–' : `${Math.round(value).toLocaleString('en-US')}`);
export const ratio = (value, digits = 2) =>
  value === undefined || !Number.isFinite(value) ? '–' : `${value.toFixed(digits)}×`;
export const mib = (bytes) => `${(bytes / 1024 / 1024).toFixed(0)} MiB`;
export const sum = (values) => values.reduce((a, b) => a + b, 0);
