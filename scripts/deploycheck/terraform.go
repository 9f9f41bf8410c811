package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclparse"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/hashicorp/hcl/v2/hclwrite"
)

// builtinRoots are the first names of references Terraform itself defines.
var builtinRoots = map[string]bool{
	"var": true, "local": true, "data": true, "module": true, "path": true,
	"terraform": true, "count": true, "each": true, "self": true,
}

// tfModule is what the files of one Terraform module declare.
type tfModule struct {
	variables map[string]bool
	locals    map[string]bool
	resources map[string]bool // "TYPE.NAME"
	data      map[string]bool // "TYPE.NAME"
	modules   map[string]bool
	// dynamic holds dynamic block labels: in their content, LABEL.value
	// and LABEL.key are the iterator.
	dynamic map[string]bool
}

// checkTerraform parses every .tf file in dir and reports syntax errors,
// files `terraform fmt` would change, a missing required_version or
// unpinned provider, variables and outputs without descriptions (and
// variables without types), duplicate declarations, and references to
// variables, locals, resources, data sources or modules that no file
// declares. What it cannot check without the provider's schema: attribute
// names and types.
//
// With schema (provider name -> CDKTF bindings directory), attribute and
// block names are also checked against those providers' schemas.
func checkTerraform(dir string, schema map[string]string) ([]string, error) {
	paths, err := filepath.Glob(filepath.Join(dir, "*.tf"))
	if err != nil {
		return nil, err
	}
	if len(paths) == 0 {
		return nil, fmt.Errorf("no .tf files in %s", dir)
	}
	sort.Strings(paths)
	parser := hclparse.NewParser()
	var problems []string
	var bodies []*hclsyntax.Body
	parsed := true
	for _, p := range paths {
		src, err := os.ReadFile(p)
		if err != nil {
			return nil, err
		}
		f, diags := parser.ParseHCL(src, p)
		for _, d := range diags {
			problems = append(problems, d.Error())
		}
		if diags.HasErrors() {
			parsed = false
			continue
		}
		if formatted := hclwrite.Format(src); !bytes.Equal(formatted, src) {
			problems = append(problems, fmt.Sprintf("%s: not formatted as terraform fmt writes it", p))
		}
		bodies = append(bodies, f.Body.(*hclsyntax.Body))
	}
	if !parsed {
		// References cannot be checked against a partial module.
		return problems, nil
	}
	m := &tfModule{variables: map[string]bool{}, locals: map[string]bool{}, resources: map[string]bool{},
		data: map[string]bool{}, modules: map[string]bool{}, dynamic: map[string]bool{}}
	problems = append(problems, m.declare(bodies)...)
	ps := &providerSchema{dirs: schema, files: map[string]string{}}
	for _, b := range bodies {
		problems = append(problems, m.checkReferences(b)...)
		problems = append(problems, ps.check(b.Blocks)...)
	}
	return problems, nil
}

// declare collects the module's declarations and checks the top-level
// blocks that have required parts.
func (m *tfModule) declare(bodies []*hclsyntax.Body) []string {
	var problems []string
	bad := func(r hcl.Range, format string, args ...any) {
		problems = append(problems, fmt.Sprintf("%s: %s", r, fmt.Sprintf(format, args...)))
	}
	once := func(set map[string]bool, key string, r hcl.Range, what string) {
		if set[key] {
			bad(r, "%s %s declared twice", what, key)
		}
		set[key] = true
	}
	outputs := map[string]bool{}
	sawTerraform := false
	for _, body := range bodies {
		for _, blk := range body.Blocks {
			r := blk.DefRange()
			switch blk.Type {
			case "variable":
				once(m.variables, blk.Labels[0], r, "variable")
				for _, attr := range []string{"description", "type"} {
					if _, ok := blk.Body.Attributes[attr]; !ok {
						bad(r, "variable %s has no %s", blk.Labels[0], attr)
					}
				}
			case "output":
				once(outputs, blk.Labels[0], r, "output")
				if _, ok := blk.Body.Attributes["description"]; !ok {
					bad(r, "output %s has no description", blk.Labels[0])
				}
			case "locals":
				for name, attr := range blk.Body.Attributes {
					once(m.locals, name, attr.SrcRange, "local")
				}
			case "resource":
				once(m.resources, blk.Labels[0]+"."+blk.Labels[1], r, "resource")
			case "data":
				once(m.data, blk.Labels[0]+"."+blk.Labels[1], r, "data source")
			case "module":
				once(m.modules, blk.Labels[0], r, "module")
			case "terraform":
				sawTerraform = true
				problems = append(problems, checkTerraformBlock(blk)...)
			case "provider", "moved", "import", "removed", "check":
			default:
				bad(r, "unknown top-level block %q", blk.Type)
			}
			hclsyntax.VisitAll(blk.Body, func(n hclsyntax.Node) hcl.Diagnostics {
				if b, ok := n.(*hclsyntax.Block); ok && b.Type == "dynamic" && len(b.Labels) == 1 {
					m.dynamic[b.Labels[0]] = true
					if it, ok := b.Body.Attributes["iterator"]; ok {
						m.dynamic[hcl.ExprAsKeyword(it.Expr)] = true
					}
				}
				return nil
			})
		}
	}
	if !sawTerraform {
		problems = append(problems, "no terraform block (required_version, required_providers)")
	}
	return problems
}

// checkTerraformBlock wants a required_version and a version constraint
// for every required provider.
func checkTerraformBlock(blk *hclsyntax.Block) []string {
	var problems []string
	if _, ok := blk.Body.Attributes["required_version"]; !ok {
		problems = append(problems, fmt.Sprintf("%s: terraform block without required_version", blk.DefRange()))
	}
	for _, inner := range blk.Body.Blocks {
		if inner.Type != "required_providers" {
			continue
		}
		for name, attr := range inner.Body.Attributes {
			obj, ok := attr.Expr.(*hclsyntax.ObjectConsExpr)
			pinned := false
			if ok {
				for _, item := range obj.Items {
					if hcl.ExprAsKeyword(item.KeyExpr) == "version" {
						pinned = true
					}
				}
			}
			if !pinned {
				problems = append(problems, fmt.Sprintf("%s: provider %s has no version constraint", attr.SrcRange, name))
			}
		}
	}
	return problems
}

// checkReferences reports every reference in body to something the module
// does not declare. Type constraints (a variable's type) and
// ignore_changes hold names, not references, and are skipped.
func (m *tfModule) checkReferences(body *hclsyntax.Body) []string {
	var problems []string
	seen := map[string]bool{}
	var walk func(b *hclsyntax.Body, blockType string)
	walk = func(b *hclsyntax.Body, blockType string) {
		for name, attr := range b.Attributes {
			if (blockType == "variable" && name == "type") || (blockType == "lifecycle" && name == "ignore_changes") {
				continue
			}
			for _, tr := range attr.Expr.Variables() {
				if msg := m.resolve(tr); msg != "" {
					p := fmt.Sprintf("%s: %s", tr.SourceRange(), msg)
					if !seen[p] {
						seen[p] = true
						problems = append(problems, p)
					}
				}
			}
		}
		for _, blk := range b.Blocks {
			walk(blk.Body, blk.Type)
		}
	}
	walk(body, "")
	sort.Strings(problems)
	return problems
}

// resolve returns why tr names nothing declared, or "".
func (m *tfModule) resolve(tr hcl.Traversal) string {
	root := tr.RootName()
	step := func(i int) string {
		if i >= len(tr) {
			return ""
		}
		if a, ok := tr[i].(hcl.TraverseAttr); ok {
			return a.Name
		}
		return ""
	}
	switch root {
	case "var":
		if !m.variables[step(1)] {
			return fmt.Sprintf("undeclared variable var.%s", step(1))
		}
	case "local":
		if !m.locals[step(1)] {
			return fmt.Sprintf("undeclared local local.%s", step(1))
		}
	case "data":
		if key := step(1) + "." + step(2); !m.data[key] {
			return fmt.Sprintf("undeclared data source data.%s", key)
		}
	case "module":
		if !m.modules[step(1)] {
			return fmt.Sprintf("undeclared module module.%s", step(1))
		}
	default:
		if builtinRoots[root] || m.dynamic[root] {
			return ""
		}
		if key := root + "." + step(1); !m.resources[key] {
			if !strings.Contains(root, "_") {
				return fmt.Sprintf("unknown name %s", root)
			}
			return fmt.Sprintf("undeclared resource %s", key)
		}
	}
	return ""
}
