import { html, nothing } from 'lit-html';
import { navigate, link, rerender, type View } from '../app.js';
import { errorText } from '../format.js';
import { parseCredential, signIn } from '../session.js';

/** Nothing is shown without a credential: an API key, or a stream token for one run. */
export function signInView(): View {
  let error = '';
  let busy = false;

  async function submit(e: SubmitEvent): Promise<void> {
    e.preventDefault();
    const form = e.target as HTMLFormElement;
    const token = String(new FormData(form).get('credential') ?? '');
    const parsed = parseCredential(token);
    if (!parsed.ok) {
      error = parsed.why;
      rerender();
      return;
    }
    busy = true;
    error = '';
    rerender();
    const s = parsed.session;
    try {
      // One cheap call proves the credential before anything is shown.
      if (s.kind === 'stream-token') await s.clients.runs.getRun({ runId: s.runId ?? '' });
      else await s.clients.runs.listRuns({ pageSize: 1 });
      signIn(s);
      navigate(s.kind === 'stream-token' ? link(`runs/${encodeURIComponent(s.runId ?? '')}`) : `${location.pathname}${location.search}`, true);
    } catch (err) {
      error = `Sign-in failed: ${errorText(err)}`;
    } finally {
      busy = false;
      rerender();
    }
  }

  return {
    title: () => 'Sign in',
    template: () => html`
      <section class="signin card">
        <h1>Sign in to Waymark</h1>
        <p>Paste an API key (<code>wmk_…</code>) or a stream token for one run (<code>wms_…</code>).
          <code>waymark dev</code> writes a local admin key to <code>.waymark/local-admin-key</code>.
          The credential stays in this tab only.</p>
        <form @submit=${submit}>
          <label for="credential">API key or stream token</label>
          <input id="credential" name="credential" type="password" autocomplete="off" required spellcheck="false" />
          <button type="submit" ?disabled=${busy}>${busy ? 'Checking…' : 'Sign in'}</button>
        </form>
        ${error ? html`<p class="error" role="alert">${error}</p>` : nothing}
        <p class="muted">No server at hand? <a href=${link('offline')}>Open an exported journal</a> instead.</p>
      </section>`,
  };
}
