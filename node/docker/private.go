package docker

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
)

// sweep makes private every entry of dir that group or other may access.
func sweep(dir string) error {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	var errs []error
	for _, e := range ents {
		errs = append(errs, privatize(filepath.Join(dir, e.Name())))
	}
	return errors.Join(errs...)
}

// privatize takes group's and other's access away from a file or directory (never following a symlink).
func privatize(path string) error {
	fi, err := os.Lstat(path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) { // a temporary file already renamed
			return nil
		}
		return err
	}
	if fi.Mode()&(fs.ModeSymlink|fs.ModeNamedPipe|fs.ModeSocket|fs.ModeDevice) != 0 || fi.Mode().Perm()&0o077 == 0 {
		return nil
	}
	err = os.Chmod(path, fi.Mode().Perm()&^0o077)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	return err
}
