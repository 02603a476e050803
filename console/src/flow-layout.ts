import type { Flow } from '@waymark-dev/client/browser';

/*
 * Where the flow graph's nodes go: layers by longest path from `start` (so every edge of the DAG
 * part points right; a loop's back edge points left), nodes of a layer stacked. Deterministic, so
 * a registered version always looks the same. Pure.
 */

export interface Placed { id: string; kind: string; x: number; y: number }
export interface Layout { nodes: Placed[]; width: number; height: number; at: Map<string, Placed> }

export const NODE_W = 150;
export const NODE_H = 44;
const GAP_X = 130;
const GAP_Y = 28;
const PAD = 16;

export function layoutFlow(flow: Flow): Layout {
  const out = new Map<string, string[]>();
  for (const e of flow.edges) out.set(e.from, [...(out.get(e.from) ?? []), e.to]);
  const layer = new Map<string, number>([[flow.start, 0]]);
  // Breadth first from the start; a node keeps the first (shortest) layer it is reached at, which
  // keeps loops from pushing nodes right forever.
  const queue = [flow.start];
  while (queue.length) {
    const id = queue.shift()!;
    for (const to of out.get(id) ?? []) {
      if (layer.has(to)) continue;
      layer.set(to, layer.get(id)! + 1);
      queue.push(to);
    }
  }
  let next = Math.max(0, ...layer.values()) + 1;
  for (const n of flow.nodes) if (!layer.has(n.id)) layer.set(n.id, next++);
  const rows = new Map<number, number>();
  const nodes: Placed[] = flow.nodes.map((n) => {
    const l = layer.get(n.id)!;
    const r = rows.get(l) ?? 0;
    rows.set(l, r + 1);
    return { id: n.id, kind: n.kind.case ?? 'node', x: PAD + l * (NODE_W + GAP_X), y: PAD + r * (NODE_H + GAP_Y) };
  });
  const width = PAD * 2 + (Math.max(0, ...layer.values()) + 1) * (NODE_W + GAP_X) - GAP_X;
  const height = PAD * 2 + Math.max(1, ...rows.values()) * (NODE_H + GAP_Y) - GAP_Y;
  return { nodes, width, height, at: new Map(nodes.map((n) => [n.id, n])) };
}
