import { ref } from 'lit-html/directives/ref.js';

/**
 * Sets inline styles through the CSSOM (element.style), which the console's CSP
 * (`style-src 'self'`, no 'unsafe-inline') allows; a `style` attribute, or lit's styleMap on its
 * first render, would be refused. Used for computed geometry only: bar offsets, row positions.
 */
export function place(styles: Record<string, string>) {
  return ref((el) => {
    if (!el) return;
    const style = (el as HTMLElement).style;
    for (const [k, v] of Object.entries(styles)) style.setProperty(k, v);
  });
}
