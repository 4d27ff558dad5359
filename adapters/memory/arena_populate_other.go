//go:build darwin || freebsd || netbsd || openbsd

package memory

const mapPopulate = 0
