package elastictest

import (
	"archive/zip"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

const (
	mavenGroupPath = "org/elasticsearch/distribution/integ-test-zip/elasticsearch"
	mavenArtifact  = "org.elasticsearch.distribution.integ-test-zip:elasticsearch"
	// A fully qualified plugin goal works without a pom.xml; 3.8.1 resolves on Maven 3.8.7.
	mavenCopyGoal = "org.apache.maven.plugins:maven-dependency-plugin:3.8.1:copy"
	mavenTimeout  = 15 * time.Minute
)

func version() string {
	if v := os.Getenv(envVersion); v != "" {
		return v
	}
	return DefaultVersion
}

func cacheDir() (string, error) {
	if d := os.Getenv(envCacheDir); d != "" {
		return d, nil
	}
	d, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("no cache directory (%v); set %s", err, envCacheDir)
	}
	return filepath.Join(d, "reqlog"), nil
}

// javaHome finds the Java installation to hand to Elasticsearch as
// ES_JAVA_HOME: the integ-test-zip has no bundled JDK.
func javaHome() (string, error) {
	if h := os.Getenv("ES_JAVA_HOME"); h != "" {
		if !isFile(filepath.Join(h, "bin", "java")) {
			return "", fmt.Errorf("ES_JAVA_HOME=%s has no bin/java", h)
		}
		return h, nil
	}
	if h := os.Getenv("JAVA_HOME"); h != "" && isFile(filepath.Join(h, "bin", "java")) {
		return h, nil
	}
	p, err := exec.LookPath("java")
	if err != nil {
		return "", errors.New("java not found on PATH; install Java 17 or later")
	}
	// /usr/bin/java is usually a chain of symlinks into the JDK's bin/.
	real, err := filepath.EvalSymlinks(p)
	if err != nil {
		return "", fmt.Errorf("resolving %s: %w", p, err)
	}
	return filepath.Dir(filepath.Dir(real)), nil
}

// ensureDist returns the directory of the extracted distribution of version v
// under cache, fetching and extracting it first if needed. A file lock
// serialises concurrent test binaries; extraction goes to a temporary
// directory renamed into place, so a present directory is always complete.
func ensureDist(cache, v string) (string, error) {
	final := filepath.Join(cache, "elasticsearch-"+v)
	if isFile(filepath.Join(final, "bin", "elasticsearch")) {
		return final, nil
	}
	if err := os.MkdirAll(cache, 0o755); err != nil {
		return "", err
	}
	unlock, err := lockPath(filepath.Join(cache, "elasticsearch-"+v+".lock"))
	if err != nil {
		return "", err
	}
	defer unlock()
	if isFile(filepath.Join(final, "bin", "elasticsearch")) {
		return final, nil // another test binary made it while we waited
	}
	// Leftovers of a killed run; nobody else works on v while we hold the lock.
	if old, _ := filepath.Glob(filepath.Join(cache, ".tmp-elasticsearch-"+v+"-*")); len(old) > 0 {
		for _, o := range old {
			os.RemoveAll(o)
		}
	}
	work, err := os.MkdirTemp(cache, ".tmp-elasticsearch-"+v+"-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(work)

	zipPath, err := findZip(v, work)
	if err != nil {
		return "", err
	}
	if err := unzip(zipPath, filepath.Join(work, "x")); err != nil {
		return "", fmt.Errorf("extracting %s: %w", zipPath, err)
	}
	top := filepath.Join(work, "x", "elasticsearch-"+v)
	if !isFile(filepath.Join(top, "bin", "elasticsearch")) {
		return "", fmt.Errorf("%s has no elasticsearch-%s/bin/elasticsearch", zipPath, v)
	}
	os.RemoveAll(final) // an incomplete directory from outside this package's protocol
	if err := os.Rename(top, final); err != nil {
		return "", err
	}
	return final, nil
}

// findZip returns the distribution zip from the local Maven repository, or
// has Maven download it into dir.
func findZip(v, dir string) (string, error) {
	name := "elasticsearch-" + v + ".zip"
	if home, err := os.UserHomeDir(); err == nil {
		p := filepath.Join(home, ".m2", "repository", filepath.FromSlash(mavenGroupPath), v, name)
		if isFile(p) {
			return p, nil
		}
	}
	mvn, err := exec.LookPath("mvn")
	if err != nil {
		return "", fmt.Errorf("no Elasticsearch %s in the cache or ~/.m2, and mvn is not on PATH to download it; install Maven", v)
	}
	ctx, cancel := context.WithTimeout(context.Background(), mavenTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, mvn, "-B", "-q", mavenCopyGoal,
		"-Dartifact="+mavenArtifact+":"+v+":zip", "-DoutputDirectory="+dir)
	cmd.Dir = dir // no pom.xml here, so Maven does not pick up a project
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	fmt.Fprintf(os.Stderr, "elastictest: downloading Elasticsearch %s with Maven (~110 MB, once)\n", v)
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("mvn could not fetch %s:%s:zip: %v\n%s", mavenArtifact, v, err, tail(out.Bytes(), 3000))
	}
	p := filepath.Join(dir, name)
	if !isFile(p) {
		return "", fmt.Errorf("mvn succeeded but %s is missing\n%s", p, tail(out.Bytes(), 3000))
	}
	return p, nil
}

// unzip extracts zipPath into dst, keeping the permission bits of the entries
// (bin/ scripts must stay executable).
func unzip(zipPath, dst string) error {
	r, err := zip.OpenReader(zipPath)
	if err != nil {
		return err
	}
	defer r.Close()
	for _, f := range r.File {
		name := filepath.FromSlash(strings.TrimSuffix(f.Name, "/"))
		if !filepath.IsLocal(name) {
			return fmt.Errorf("unsafe path %q in zip", f.Name)
		}
		target := filepath.Join(dst, name)
		mode := f.Mode()
		switch {
		case mode.IsDir():
			if err := os.MkdirAll(target, 0o755); err != nil {
				return err
			}
		case mode.IsRegular():
			if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
				return err
			}
			if err := extractFile(f, target, mode.Perm()|0o444); err != nil {
				return err
			}
		default:
			return fmt.Errorf("unsupported entry %q (%v) in zip", f.Name, mode)
		}
	}
	return nil
}

func extractFile(f *zip.File, target string, perm fs.FileMode) error {
	rc, err := f.Open()
	if err != nil {
		return err
	}
	defer rc.Close()
	w, err := os.OpenFile(target, os.O_CREATE|os.O_EXCL|os.O_WRONLY, perm)
	if err != nil {
		return err
	}
	if _, err := io.Copy(w, rc); err != nil { // also verifies the CRC
		w.Close()
		return err
	}
	return w.Close()
}

// copyTree copies the regular files and directories under src to dst,
// hard-linking files instead when link is true and the link succeeds.
func copyTree(src, dst string, link bool) error {
	return filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, p)
		if err != nil {
			return err
		}
		target := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(target, 0o755)
		}
		if link && os.Link(p, target) == nil {
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		in, err := os.Open(p)
		if err != nil {
			return err
		}
		defer in.Close()
		out, err := os.OpenFile(target, os.O_CREATE|os.O_EXCL|os.O_WRONLY, info.Mode().Perm())
		if err != nil {
			return err
		}
		if _, err := io.Copy(out, in); err != nil {
			out.Close()
			return err
		}
		return out.Close()
	})
}

func isFile(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.Mode().IsRegular()
}

// tail returns about the last n bytes of b, starting at a line boundary.
func tail(b []byte, n int) string {
	if len(b) > n {
		b = b[len(b)-n:]
		if i := bytes.IndexByte(b, '\n'); i >= 0 {
			b = b[i+1:]
		}
	}
	return strings.TrimRight(string(b), "\n")
}

func fileTail(p string, n int64) string {
	f, err := os.Open(p)
	if err != nil {
		return fmt.Sprintf("(no output: %v)", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return err.Error()
	}
	off := max(st.Size()-n, 0)
	b := make([]byte, st.Size()-off)
	if _, err := f.ReadAt(b, off); err != nil && err != io.EOF {
		return err.Error()
	}
	return tail(b, int(n))
}
