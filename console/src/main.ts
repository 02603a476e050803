// First: a run page's first requests leave before the rest of the bundle is evaluated.
import './first-requests.js';
import { html, nothing, render } from 'lit-html';
import './styles.css';
import { BASE, link, navigate, setDraw, setNavigate, type View } from './app.js';
import { session, signOut } from './session.js';
import { signInView } from './views/sign-in.js';
import { runsView } from './views/runs.js';
import { runView } from './views/run.js';
import { approvalsView } from './views/approvals.js';
import { flowsView } from './views/flows.js';
import { offlineView } from './views/offline.js';

/*
 * The console's shell: routes a path under /console/ to a view, draws the header, and turns
 * clicks on links inside the console into history navigation (a single-page app; the server
 * answers index.html for every such path, so reloads and shared links work).
 */

const root = document.getElementById('app')!;
let view: View | undefined;

function route(): View {
  const path = location.pathname.startsWith(BASE) ? location.pathname.slice(BASE.length) : '';
  const parts = path.split('/').filter(Boolean).map(decodeURIComponent);
  if (parts[0] === 'offline') return offlineView();
  const s = session();
  if (!s) return signInView();
  if (s.kind === 'stream-token') {
    // A stream token reads one run: its page is the whole console.
    if (parts[0] !== 'runs' || parts[1] !== s.runId) {
      navigate(link(`runs/${encodeURIComponent(s.runId ?? '')}`), true);
      return runView(s.runId ?? '');
    }
  }
  if (parts[0] === 'runs' && parts[1]) return runView(parts[1]);
  if (parts[0] === 'approvals') return approvalsView();
  if (parts[0] === 'flows') return flowsView(parts[1]);
  return runsView();
}

function mount(): void {
  performance.mark('console-mount');
  view?.dispose?.();
  view = route();
  draw();
  document.getElementById('main')?.focus({ preventScroll: true });
}

function draw(): void {
  if (!view) return;
  const v = view;
  document.title = `${v.title()} · Waymark`;
  render(shell(v), root);
}

function shell(v: View) {
  const s = session();
  const here = location.pathname;
  const nav = (path: string, label: string) => {
    const href = link(path);
    const current = path === '' ? here === BASE || here.startsWith(`${BASE}runs`) : here.startsWith(href);
    return html`<a href=${href} aria-current=${current ? 'page' : 'false'}>${label}</a>`;
  };
  return html`
    <a class="skip" href="#main">Skip to content</a>
    <header class="top">
      <a class="brand" href=${BASE}>Waymark</a>
      ${s?.kind === 'key'
        ? html`<nav aria-label="Main">${nav('', 'Runs')}${nav('approvals', 'Approvals')}${nav('flows', 'Flows')}${nav('offline', 'Open file')}</nav>`
        : html`<nav aria-label="Main">${nav('offline', 'Open file')}</nav>`}
      <span class="spacer"></span>
      ${s
        ? html`<span class="who">${s.kind === 'key' ? 'API key' : 'Stream token'} ${s.token.slice(0, 12)}…</span>
            <button class="ghost" @click=${() => { signOut(); navigate(BASE); }}>Sign out</button>`
        : nothing}
    </header>
    <main id="main" tabindex="-1">${v.template()}</main>`;
}

setDraw(draw);
setNavigate(mount);
window.addEventListener('popstate', mount);
document.addEventListener('click', (e) => {
  if (e.defaultPrevented || e.button !== 0 || e.metaKey || e.ctrlKey || e.shiftKey || e.altKey) return;
  const a = (e.target as Element | null)?.closest?.('a');
  if (!a || a.target || a.hasAttribute('download') || a.origin !== location.origin || !a.pathname.startsWith(BASE)) return;
  if (a.hash && a.pathname === location.pathname) return;
  e.preventDefault();
  navigate(`${a.pathname}${a.search}`);
});
mount();
