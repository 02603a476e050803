import { html, nothing } from 'lit-html';
import type { JsonObject, JsonValue } from '@bufbuild/protobuf';

/*
 * A decision form drawn from an approval's JSON Schema: each property of an object schema becomes
 * a field (a checkbox for booleans, a number input, a select for an enum, a text input otherwise).
 * `approved` and `comment` are the decision itself and the comment box, so they are not drawn.
 * The server validates the payload against the schema again; this only makes it easy to fill in.
 */

interface Prop { type?: string; enum?: JsonValue[]; description?: string; title?: string }
interface ObjectSchema { properties?: Record<string, Prop>; required?: string[] }

const OWN = new Set(['approved', 'comment']);

function props(schema: JsonValue | undefined): Array<[string, Prop]> {
  if (!schema || typeof schema !== 'object' || Array.isArray(schema)) return [];
  return Object.entries((schema as ObjectSchema).properties ?? {}).filter(([k]) => !OWN.has(k));
}

export function schemaFields(schema: JsonValue | undefined, id: string) {
  const fields = props(schema);
  if (fields.length === 0) return nothing;
  const required = new Set((schema as ObjectSchema).required ?? []);
  return html`<fieldset><legend>Decision details</legend>
    ${fields.map(([name, p]) => {
      const label = p.title ?? name;
      const fid = `f-${id}-${name}`;
      if (p.enum) return html`<label for=${fid}>${label}</label><select id=${fid} name=${`schema.${name}`} ?required=${required.has(name)}>${p.enum.map((v) => html`<option value=${JSON.stringify(v)}>${String(v)}</option>`)}</select>`;
      if (p.type === 'boolean') return html`<label class="check"><input type="checkbox" name=${`schema.${name}`} /> ${label}</label>`;
      return html`<label for=${fid}>${label}</label><input id=${fid} name=${`schema.${name}`} type=${p.type === 'number' || p.type === 'integer' ? 'number' : 'text'} ?required=${required.has(name)} />`;
    })}
  </fieldset>`;
}

/** The schema's fields from the form, as a JSON object; undefined when the schema has none. */
export function readSchemaFields(schema: JsonValue | undefined, form: HTMLFormElement): JsonObject | undefined {
  const fields = props(schema);
  if (fields.length === 0) return undefined;
  const d = new FormData(form);
  const out: JsonObject = {};
  for (const [name, p] of fields) {
    const raw = d.get(`schema.${name}`);
    let v: JsonValue | undefined;
    if (p.type === 'boolean') v = raw === 'on';
    else if (raw === null || raw === '') v = undefined;
    else if (p.enum) v = JSON.parse(String(raw)) as JsonValue;
    else if (p.type === 'number' || p.type === 'integer') v = Number(raw);
    else v = String(raw);
    if (v !== undefined) out[name] = v;
  }
  return out;
}
