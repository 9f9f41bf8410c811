package webui

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// scripts/serve.sh runs `scripts/build-ui.sh --if-changed` before every
// start (issue 23: each start spent 20–25 s on npm ci and a build). The
// script is run here in a copy of the repository's layout whose npm and
// npx only note that they ran: a first start builds, a second one with
// the sources as they were does not, and a changed source builds again.
func TestBuildUIOnlyWhenSourcesChanged(t *testing.T) {
	script, err := os.ReadFile(filepath.Join("..", "..", "scripts", "build-ui.sh"))
	if err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	write := func(rel, content string) {
		t.Helper()
		p := filepath.Join(root, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	write("scripts/build-ui.sh", string(script))
	web := "frontend-api/web/"
	for _, f := range []string{"index.html", "package.json", "package-lock.json", "vite.config.ts", "tsconfig.json", "src/main.ts"} {
		write(web+f, f+"\n")
	}
	// node_modules newer than the lockfile: no npm ci (npm would note it too).
	write(web+"node_modules/.package-lock.json", "{}\n")
	write("frontend-api/webui/dist/placeholder.html", "placeholder\n")
	// npx --no-install vite build writes the bundle; tsc writes nothing.
	log := filepath.Join(root, "ran.log")
	write("bin/npx", `#!/usr/bin/env bash
echo "npx $*" >>`+log+`
if [ "$3" = build ]; then mkdir -p ../webui/dist/assets && echo built >../webui/dist/index.html; fi
`)
	write("bin/npm", "#!/usr/bin/env bash\necho \"npm $*\" >>"+log+"\n")
	builds := func() int {
		b, _ := os.ReadFile(log)
		return strings.Count(string(b), "vite build")
	}
	start := func() string {
		t.Helper()
		cmd := exec.Command("bash", filepath.Join(root, "scripts", "build-ui.sh"), "--if-changed")
		cmd.Env = append(os.Environ(), "PATH="+filepath.Join(root, "bin")+":"+os.Getenv("PATH"))
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("build-ui.sh --if-changed: %v\n%s", err, out)
		}
		return string(out)
	}

	start()
	if n := builds(); n != 1 {
		t.Fatalf("first start: %d builds, want 1", n)
	}
	if out := start(); builds() != 1 || !strings.Contains(out, "up to date") {
		t.Fatalf("second start with the same sources: %d builds in all, want 1; it said %q", builds(), out)
	}
	write(web+"src/main.ts", "changed\n")
	start()
	if n := builds(); n != 2 {
		t.Fatalf("after a source changed: %d builds in all, want 2", n)
	}
	if b, _ := os.ReadFile(log); strings.Contains(string(b), "npm ci") {
		t.Errorf("npm ci ran although node_modules matches the lockfile:\n%s", b)
	}
}

// The tbup and tbhub binaries the README's quick start builds at the top
// of the repository are ignored by git (issue 23).
func TestBuiltBinariesIgnoredByGit(t *testing.T) {
	top, err := exec.Command("git", "rev-parse", "--show-toplevel").Output()
	if err != nil {
		t.Fatalf("git rev-parse --show-toplevel: %v", err)
	}
	for _, bin := range []string{"tbup", "tbhub"} {
		cmd := exec.Command("git", "check-ignore", "-q", bin)
		cmd.Dir = strings.TrimSpace(string(top))
		if err := cmd.Run(); err != nil {
			t.Errorf("git check-ignore %s: %v (a built %s would show as untracked)", bin, err, bin)
		}
	}
}
