// Command printversion prints version.String(), for TestLinkTimeVersion
// to build with -ldflags -X.
package main

import (
	"fmt"

	"github.com/waitroom/waitroom/internal/infra/version"
)

func main() {
	fmt.Println(version.String())
}
