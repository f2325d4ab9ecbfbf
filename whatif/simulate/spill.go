package simulate

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
	"os"
)

// int32Spill is a sequence of int32s written once to a temporary file
// and read back once, in order: per-request counts (a request's bound
// blocks, its bound hits) that a long play uses in request order and
// must not hold.
type int32Spill struct {
	f   *os.File
	w   *bufio.Writer
	r   *bufio.Reader
	buf [4]byte
}

// newInt32Spill makes a spill in a temporary file under dir ("": the
// system's temporary directory); close removes it.
func newInt32Spill(dir, name string) (*int32Spill, error) {
	f, err := os.CreateTemp(dir, "hintstream-"+name+"-*.spill")
	if err != nil {
		return nil, fmt.Errorf("simulate: %s spill: %w", name, err)
	}
	return &int32Spill{f: f, w: bufio.NewWriterSize(f, 64<<10)}, nil
}

func (s *int32Spill) add(v int32) error {
	binary.LittleEndian.PutUint32(s.buf[:], uint32(v))
	_, err := s.w.Write(s.buf[:])
	return err
}

// rewind ends the writing; next then reads from the first value.
func (s *int32Spill) rewind() error {
	if err := s.w.Flush(); err != nil {
		return fmt.Errorf("simulate: spill %s: %w", s.f.Name(), err)
	}
	if _, err := s.f.Seek(0, io.SeekStart); err != nil {
		return fmt.Errorf("simulate: spill %s: %w", s.f.Name(), err)
	}
	s.r = bufio.NewReaderSize(s.f, 64<<10)
	return nil
}

func (s *int32Spill) next() (int32, error) {
	if _, err := io.ReadFull(s.r, s.buf[:]); err != nil {
		return 0, fmt.Errorf("simulate: spill %s: %w", s.f.Name(), err)
	}
	return int32(binary.LittleEndian.Uint32(s.buf[:])), nil
}

func (s *int32Spill) close() error {
	err := s.f.Close()
	if rerr := os.Remove(s.f.Name()); err == nil {
		err = rerr
	}
	return err
}
