import ts from "typescript";
import { describe, expect, it } from "vitest";

// Every source file's text (Vite's glob import), tests left out.
const sources = import.meta.glob<string>(["./**/*.ts", "!./**/*.test.ts"], { query: "?raw", import: "default", eager: true });

describe("UI text", () => {
  it("has no literal backticks (markdown's code marks): commands are <code>", () => {
    expect(Object.keys(sources).length).toBeGreaterThan(20);
    const found: string[] = [];
    for (const [file, text] of Object.entries(sources)) {
      const sf = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true);
      const visit = (n: ts.Node) => {
        // String literals and the text parts of template literals (their
        // own backtick delimiters are not text).
        if ((ts.isStringLiteral(n) || ts.isNoSubstitutionTemplateLiteral(n) || ts.isTemplateLiteralToken(n)) && n.text.includes("`"))
          found.push(`${file}:${sf.getLineAndCharacterOfPosition(n.getStart()).line + 1}: ${n.text}`);
        ts.forEachChild(n, visit);
      };
      visit(sf);
    }
    expect(found).toEqual([]);
  });
});
