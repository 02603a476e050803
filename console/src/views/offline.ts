import { html, nothing } from 'lit-html';
import { rerender, type View } from '../app.js';
import { errorText } from '../format.js';
import { readJournalFile } from '../journal-file.js';
import { RunData } from '../run-data.js';
import { runPage } from './run.js';

/**
 * An exported journal opened from a file, in the run page's views, with no server and no
 * credential: the file is read in the browser and never uploaded.
 */
export function offlineView(): View {
  let page: View | undefined;
  let error = '';
  let name = '';

  async function open(e: Event): Promise<void> {
    const file = (e.target as HTMLInputElement).files?.[0];
    if (!file) return;
    try {
      const { run, entries } = readJournalFile(await file.text());
      name = file.name;
      page?.dispose?.();
      page = runPage(RunData.offline(run, entries), { title: 'Exported run', header: () => html`<p class="muted">Opened from <strong>${name}</strong>, offline: ${entries.length} entries.</p>` });
      error = '';
    } catch (err) {
      error = `That file cannot be read: ${errorText(err)}`;
    }
    rerender();
  }

  const picker = html`<section class="card offline-pick">
    <h1>Open an exported journal</h1>
    <p>A file saved with <em>Export journal</em> on a run's page, or <code>waymark runs journal &lt;run&gt; -o json</code>. It is read here, in the browser, and sent nowhere.</p>
    <label for="journal-file">Journal file</label>
    <input id="journal-file" type="file" accept=".json,.jsonl,application/json" @change=${open} />
    ${error ? html`<p class="error" role="alert">${error}</p>` : nothing}
  </section>`;

  return {
    title: () => page?.title() ?? 'Open a journal',
    dispose: () => page?.dispose?.(),
    template: () => (page ? html`${page.template()}<details class="reopen"><summary>Open another file</summary>${picker}</details>` : picker),
  };
}
