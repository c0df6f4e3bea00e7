/**
 * A chart's time-axis labels against the UTC time of each tick, run in the page (the test
 * compiles without the DOM types, so it is given as source). `chart` is an expression for the
 * uPlot instance. Returns the labels that do not read as their tick's UTC time: none is right.
 */
export function utcAxisMismatches(chart: string): string {
  return `(() => {
    const u = ${chart};
    // uPlot keeps a drawn axis's ticks (seconds) and their labels in these fields; it has no public reader of them.
    const axis = u.axes[0];
    const pad = (n) => String(n).padStart(2, '0');
    return axis._splits.map((s, i) => {
      const label = String(axis._values[i]).split('\\n')[0];
      const d = new Date(s * 1000);
      const date = d.getUTCFullYear() + '-' + pad(d.getUTCMonth() + 1) + '-' + pad(d.getUTCDate());
      const ok = /^\\d{4}-\\d{2}-\\d{2}$/.test(label) ? label === date
        : /^\\d{2}-\\d{2}$/.test(label) ? label === date.slice(5)
        : /^\\d{2}:\\d{2}$/.test(label) ? label === pad(d.getUTCHours()) + ':' + pad(d.getUTCMinutes())
        : /^\\d{4}$/.test(label) ? label === String(d.getUTCFullYear())
        : /^[A-Z][a-z]{2}$/.test(label) ? label === ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'][d.getUTCMonth()]
        : false;
      return ok ? null : label + ' at ' + d.toISOString();
    }).filter(Boolean);
  })()`;
}
