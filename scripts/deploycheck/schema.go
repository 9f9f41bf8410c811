package main

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/hashicorp/hcl/v2/hclsyntax"
)

// providerSchema checks attribute and block names against a provider's
// schema as the CDK for Terraform bindings on npm publish it
// (@cdktf/provider-google, @cdktf/provider-random): one TypeScript file
// per resource, lib/<type-in-kebab-case>/index.d.ts, with an interface
// per block ("CloudRunV2ServiceTemplateContainers") whose readonly
// properties are the block's arguments in camelCase. The bindings are
// generated from the provider's own schema, so a name missing there is
// one the provider would refuse.
type providerSchema struct {
	dirs  map[string]string // provider name ("google") -> package directory
	files map[string]string // d.ts path -> contents ("" if missing)
}

// metaArguments are Terraform's own, valid in every resource.
var metaArguments = map[string]bool{"for_each": true, "count": true, "depends_on": true, "provider": true}

func (s *providerSchema) check(blocks []*hclsyntax.Block) []string {
	var problems []string
	for _, b := range blocks {
		if (b.Type != "resource" && b.Type != "data") || len(b.Labels) == 0 {
			continue
		}
		provider, rest, ok := strings.Cut(b.Labels[0], "_")
		dir, known := s.dirs[provider]
		if !ok || !known {
			continue
		}
		file, prefix := filepath.Join(dir, "lib", kebab(rest), "index.d.ts"), pascal(rest)
		if b.Type == "data" {
			file = filepath.Join(dir, "lib", "data-"+provider+"-"+kebab(rest), "index.d.ts")
			prefix = "Data" + pascal(provider) + prefix
		}
		src := s.read(file)
		if src == "" {
			problems = append(problems, fmt.Sprintf("%s: %s %s: no such type in the provider's schema", b.DefRange(), b.Type, b.Labels[0]))
			continue
		}
		problems = append(problems, s.checkBody(src, b.Labels[0], prefix+"Config", prefix, b.Body, true)...)
	}
	return problems
}

func (s *providerSchema) read(file string) string {
	if src, ok := s.files[file]; ok {
		return src
	}
	b, _ := os.ReadFile(file)
	s.files[file] = string(b)
	return s.files[file]
}

// checkBody checks body's names against the interface named iface;
// nested blocks are interfaces named prefix + their path.
func (s *providerSchema) checkBody(src, typ, iface, prefix string, body *hclsyntax.Body, top bool) []string {
	props, ok := interfaceProps(src, iface)
	if !ok {
		return []string{fmt.Sprintf("%s: %s: no schema for this block (%s)", body.SrcRange, typ, iface)}
	}
	var problems []string
	for name, attr := range body.Attributes {
		if top && metaArguments[name] {
			continue
		}
		if !props[camel(name)] {
			problems = append(problems, fmt.Sprintf("%s: %s has no argument %q", attr.SrcRange, typ, name))
		}
	}
	for _, blk := range body.Blocks {
		name, inner := blk.Type, blk.Body
		switch {
		case top && (name == "lifecycle" || name == "provisioner" || name == "connection"):
			continue
		case name == "dynamic" && len(blk.Labels) == 1:
			name, inner = blk.Labels[0], nil
			for _, c := range blk.Body.Blocks {
				if c.Type == "content" {
					inner = c.Body
				}
			}
		}
		if !props[camel(name)] {
			problems = append(problems, fmt.Sprintf("%s: %s has no block %q", blk.DefRange(), typ, name))
			continue
		}
		if inner != nil {
			problems = append(problems, s.checkBody(src, typ, prefix+pascal(name), prefix+pascal(name), inner, false)...)
		}
	}
	return problems
}

// interfaceProps returns the readonly property names of an exported
// TypeScript interface.
func interfaceProps(src, name string) (map[string]bool, bool) {
	start := regexp.MustCompile(`(?m)^export interface ` + regexp.QuoteMeta(name) + `\b[^{]*\{`).FindStringIndex(src)
	if start == nil {
		return nil, false
	}
	body := src[start[1]:]
	if end := strings.Index(body, "\n}"); end >= 0 {
		body = body[:end]
	}
	props := map[string]bool{}
	for _, m := range regexp.MustCompile(`(?m)^\s*readonly (\w+)\??:`).FindAllStringSubmatch(body, -1) {
		props[m[1]] = true
	}
	return props, true
}

func pascal(snake string) string {
	var b strings.Builder
	for _, part := range strings.FieldsFunc(snake, func(r rune) bool { return r == '_' || r == '-' }) {
		b.WriteString(strings.ToUpper(part[:1]) + part[1:])
	}
	return b.String()
}

func camel(snake string) string {
	p := pascal(snake)
	if p == "" {
		return p
	}
	return strings.ToLower(p[:1]) + p[1:]
}

func kebab(snake string) string { return strings.ReplaceAll(snake, "_", "-") }
