// A parser for protobuf text format (what TensorBoard's graphs route
// sends: a GraphDef as pbtxt). It knows no schema: every field is a list
// of values, each a string, a number, an enum identifier or a message.

export type Value = string | number | Message;
export interface Message {
  [field: string]: Value[];
}

// Bytes that end an identifier or number.
const DELIM = new Uint8Array(128);
for (const c of " \n\t\r{}<>[]:,;#\"'") DELIM[c.charCodeAt(0)] = 1;
const ESCAPES: Record<string, string> = { n: "\n", t: "\t", r: "\r", '"': '"', "'": "'", "\\": "\\" };

/**
 * Parses a text-format message. It reads the text in one pass with a
 * cursor (no token list), since a graph of 10,000 nodes is megabytes of it.
 */
export function parsePbtxt(src: string): Message {
  const n = src.length;
  let i = 0;

  function skip() {
    while (i < n) {
      const c = src.charCodeAt(i);
      if (c === 32 || c === 10 || c === 9 || c === 13) i++;
      else if (c === 35) {
        const j = src.indexOf("\n", i);
        i = j < 0 ? n : j + 1;
      } else break;
    }
  }

  function word(): string {
    const start = i;
    for (let c = src.charCodeAt(i); i < n && (c >= 128 || !DELIM[c]); c = src.charCodeAt(++i));
    if (i === start) throw new Error(`pbtxt: unexpected ${JSON.stringify(src[i] ?? "end of input")} at ${i}`);
    return src.slice(start, i);
  }

  function quoted(): string {
    const q = src[i++];
    let out = "";
    let start = i;
    while (i < n) {
      const c = src[i];
      if (c === q) {
        out += src.slice(start, i++);
        return out;
      }
      if (c !== "\\" || i + 1 >= n) {
        i++;
        continue;
      }
      out += src.slice(start, i);
      const e = src[i + 1];
      if (e in ESCAPES) {
        out += ESCAPES[e];
        i += 2;
      } else if (e === "x") {
        out += String.fromCharCode(parseInt(src.slice(i + 2, i + 4), 16));
        i += 4;
      } else if (e >= "0" && e <= "7") {
        let j = i + 1;
        while (j < i + 4 && src[j] >= "0" && src[j] <= "7") j++;
        out += String.fromCharCode(parseInt(src.slice(i + 1, j), 8));
        i = j;
      } else {
        out += e;
        i += 2;
      }
      start = i;
    }
    throw new Error("pbtxt: unterminated string");
  }

  const isDigit = (c: number) => c >= 48 && c <= 57;
  function value(): Value {
    skip();
    const c = src[i];
    if (c === "{" || c === "<") {
      i++;
      return message(c === "{" ? "}" : ">");
    }
    if (c === '"' || c === "'") {
      let s = quoted();
      // Adjacent strings are one.
      for (skip(); src[i] === '"' || src[i] === "'"; skip()) s += quoted();
      return s;
    }
    const w = word();
    const c0 = w.charCodeAt(0);
    const c1 = w.charCodeAt(1);
    const numeric = isDigit(c0) || (c0 === 46 && isDigit(c1)) || ((c0 === 45 || c0 === 43) && (isDigit(c1) || (c1 === 46 && isDigit(w.charCodeAt(2)))));
    return numeric ? Number(w.replace(/[fF]$/, "")) : w;
  }

  function message(close: string | null): Message {
    const m: Message = {};
    for (;;) {
      skip();
      if (i >= n) {
        if (close !== null) throw new Error("pbtxt: unterminated message");
        return m;
      }
      const c = src[i];
      if (c === close) {
        i++;
        return m;
      }
      if (c === "," || c === ";") {
        i++;
        continue;
      }
      const start = i;
      const name = word();
      if (!/^[A-Za-z_]/.test(name)) throw new Error(`pbtxt: expected a field name at ${start}, got ${JSON.stringify(name)}`);
      skip();
      if (src[i] === ":") {
        i++;
        skip();
      }
      if (name === "__proto__") throw new Error(`pbtxt: bad field name at ${start}`);
      // Own fields only: "constructor" is a field name here, not Object's.
      const list = Object.hasOwn(m, name) ? m[name] : (m[name] = []);
      if (src[i] === "[") {
        i++;
        for (;;) {
          skip();
          if (i >= n) throw new Error("pbtxt: unterminated list");
          if (src[i] === "]") {
            i++;
            break;
          }
          if (src[i] === ",") i++;
          else list.push(value());
        }
      } else list.push(value());
    }
  }
  return message(null);
}

/** A compact one-line rendering of a value (for attribute lists). */
export function formatValue(v: Value, limit = 200): string {
  let s: string;
  if (typeof v === "string") s = /^[A-Z_][A-Z0-9_]*$/.test(v) ? v : JSON.stringify(v);
  else if (typeof v === "number") s = String(v);
  else
    s = Object.entries(v)
      .map(([k, vs]) => vs.map((x) => (typeof x === "object" ? `${k} { ${formatValue(x, limit)} }` : `${k}: ${formatValue(x, limit)}`)).join(" "))
      .join(" ");
  return s.length > limit ? s.slice(0, limit) + "…" : s;
}
