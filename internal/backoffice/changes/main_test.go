package changes

import (
	"os"
	"testing"

	"github.com/waitroom/waitroom/internal/testkit/redistest"
)

// TestMain removes the package's Redis container when its tests end
// (without it every run left one behind).
func TestMain(m *testing.M) { os.Exit(redistest.Main(m)) }
