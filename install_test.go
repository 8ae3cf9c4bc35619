package lockcheck

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// The commands lockcheck prints say `lockcheck ...`: `make install` puts the stamped binary on PATH under
// that name, and the README says so (a clone after `make build` had only bin/lockcheck).
func TestMakeInstallPutsLockcheckOnPath(t *testing.T) {
	out, err := exec.Command("make", "-n", "install", "PREFIX=/opt/x").CombinedOutput()
	if err != nil {
		t.Fatalf("make -n install: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "install -m 0755 bin/lockcheck /opt/x/bin/lockcheck") || !strings.Contains(string(out), "-X main.version=") {
		t.Errorf("make install does not install the stamped binary as PREFIX/bin/lockcheck:\n%s", out)
	}
	readme, _ := os.ReadFile("README.md")
	if !strings.Contains(string(readme), "`make install`") {
		t.Error("README does not document make install")
	}
}
