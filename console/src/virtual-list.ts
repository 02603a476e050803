import { html, type TemplateResult } from 'lit-html';
import { ref } from 'lit-html/directives/ref.js';
import { elementScroll, observeElementOffset, observeElementRect, Virtualizer } from '@tanstack/virtual-core';
import { rerender } from './app.js';
import { place } from './css.js';

/*
 * A scrolling list that draws only the rows in view (TanStack Virtual's framework-free core), so a
 * journal of 10,000 entries costs the same first paint as one of 30 (docs/console.md
 * "Performance"). Rows have one fixed height: details open in a side panel, not inline. Offsets
 * are set through the CSSOM (css.ts), which the console's CSP allows, not style attributes.
 */
export class VirtualList {
  private readonly v: Virtualizer<HTMLDivElement, Element>;
  private element: HTMLDivElement | undefined;
  private cleanup: (() => void) | undefined;

  constructor(readonly rowHeight: number) {
    this.v = new Virtualizer<HTMLDivElement, Element>({
      count: 0,
      getScrollElement: () => this.element ?? null,
      estimateSize: () => rowHeight,
      overscan: 8,
      scrollToFn: elementScroll,
      observeElementRect,
      observeElementOffset,
      // Before the first layout the list shows the first screen's rows, not none.
      initialRect: { width: 800, height: 640 },
      onChange: () => rerender(),
    });
  }

  /**
   * The list: a scroller of the given accessible name, drawing rows `0..count-1` with `row(i)`.
   * `shown(last, count)` hears the last row in view (overscan left out), on every draw (a scroll
   * draws again): how a list that is not all loaded asks for more (run-data.ts near()).
   */
  template(count: number, label: string, row: (i: number) => TemplateResult, shown?: (last: number, count: number) => void): TemplateResult {
    if (this.v.options.count !== count) this.v.setOptions({ ...this.v.options, count });
    this.v._willUpdate();
    const items = this.v.getVirtualItems();
    if (shown) shown(this.v.range?.endIndex ?? items.at(-1)?.index ?? -1, count);
    return html`
      <div class="vlist" role="list" aria-label=${label} tabindex="0" ${ref((el) => this.attach(el as HTMLDivElement | undefined))}>
        <div class="vlist-inner" ${place({ height: `${this.v.getTotalSize()}px` })}>
          ${items.map((item) => html`<div class="vrow" role="listitem" ${place({ transform: `translateY(${item.start}px)`, height: `${this.rowHeight}px` })}>${row(item.index)}</div>`)}
        </div>
      </div>`;
  }

  scrollTo(index: number): void {
    this.v.scrollToIndex(index, { align: 'start' });
  }

  private attach(el: HTMLDivElement | undefined): void {
    if (el === this.element) return;
    this.cleanup?.();
    this.element = el;
    if (el) {
      this.cleanup = this.v._didMount();
      this.v._willUpdate();
    }
  }

  dispose(): void {
    this.cleanup?.();
  }
}
