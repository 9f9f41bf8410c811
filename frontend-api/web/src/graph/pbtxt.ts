// A parser for protobuf text format (what TensorBoard's graphs route
// sends: a GraphDef as pbtxt). It knows no schema: every field is a list
// of values, each a string, a number, an enum identifier or a message.

export type Value = string | number | Message;
export interface Message {
  [field: string]: Value[];
}

type Token = { kind: "ident" | "string" | "number" | "punct"; text: string };

function* tokens(src: string): Generator<Token> {
  let i = 0;
  const n = src.length;
  while (i < n) {
    const c = src[i];
    if (c === " " || c === "\n" || c === "\t" || c === "\r") {
      i++;
    } else if (c === "#") {
      while (i < n && src[i] !== "\n") i++;
    } else if (c === '"' || c === "'") {
      let out = "";
      i++;
      while (i < n && src[i] !== c) {
        if (src[i] === "\\" && i + 1 < n) {
          const e = src[i + 1];
          const simple: Record<string, string> = { n: "\n", t: "\t", r: "\r", '"': '"', "'": "'", "\\": "\\" };
          if (e in simple) {
            out += simple[e];
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
        } else out += src[i++];
      }
      i++;
      yield { kind: "string", text: out };
    } else if ("{}<>[]:,;".includes(c)) {
      i++;
      yield { kind: "punct", text: c };
    } else {
      let j = i;
      while (j < n && !" \n\t\r{}<>[]:,;#\"'".includes(src[j])) j++;
      if (j === i) throw new Error(`pbtxt: unexpected ${JSON.stringify(c)} at ${i}`);
      const text = src.slice(i, j);
      i = j;
      yield { kind: /^[-+]?(\d|\.\d)/.test(text) ? "number" : "ident", text };
    }
  }
}

/** Parses a text-format message. */
export function parsePbtxt(src: string): Message {
  const toks = [...tokens(src)];
  let p = 0;
  const peek = () => toks[p];
  const next = () => toks[p++];

  function scalar(t: Token): Value {
    if (t.kind === "number") return Number(t.text.replace(/[fF]$/, ""));
    return t.text;
  }

  function message(close: string | null): Message {
    const m: Message = {};
    while (p < toks.length) {
      const t = peek();
      if (close !== null && t.kind === "punct" && t.text === close) {
        p++;
        return m;
      }
      if (t.kind === "punct" && (t.text === "," || t.text === ";")) {
        p++;
        continue;
      }
      const name = next();
      if (name.kind !== "ident") throw new Error(`pbtxt: expected a field name, got ${JSON.stringify(name.text)}`);
      let t2 = peek();
      if (t2?.kind === "punct" && t2.text === ":") {
        p++;
        t2 = peek();
      }
      const list = (m[name.text] ??= []);
      const one = (): Value => {
        const v = next();
        if (v.kind === "punct" && (v.text === "{" || v.text === "<")) return message(v.text === "{" ? "}" : ">");
        return scalar(v);
      };
      if (t2?.kind === "punct" && t2.text === "[") {
        p++;
        while (peek() && !(peek().kind === "punct" && peek().text === "]")) {
          if (peek().kind === "punct" && peek().text === ",") p++;
          else list.push(one());
        }
        p++;
      } else list.push(one());
    }
    if (close !== null) throw new Error("pbtxt: unterminated message");
    return m;
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
