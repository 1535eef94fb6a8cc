package redistest

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"
)

// noDocker points the Docker client at a socket nobody serves and forgets
// the image chosen so far; the chosen image is restored afterwards.
func noDocker(t *testing.T) {
	t.Setenv("DOCKER_HOST", "unix://"+t.TempDir()+"/no-docker.sock")
	t.Setenv("WAITROOM_TEST_REDIS_IMAGE", "")
	saved := image
	t.Cleanup(func() { image = saved })
	image = new(imageChoice)
}

// Without Docker the failure says so and what to do instead, rather than
// a pull error from deep inside testcontainers.
func TestNoDockerSaysWhatToDo(t *testing.T) {
	noDocker(t)
	_, err := pickImage(context.Background(), DefaultImage, LocalImage)
	var de *dockerError
	if !errors.As(err, &de) {
		t.Fatalf("pickImage without Docker: %v, want a dockerError", err)
	}
	if msg := err.Error(); !strings.Contains(msg, "docker is not usable") || !strings.Contains(msg, "REDIS_ADDR") {
		t.Errorf("message %q does not say that Docker is missing and REDIS_ADDR avoids it", msg)
	}
}

// A test that needs a container of its own skips, with the reason, when
// REDIS_ADDR is set and Docker is not usable; without REDIS_ADDR (as
// under scripts/test.sh) it would fail instead, so CI cannot skip it.
func TestOwnContainerSkipsWithRedisAddrAndNoDocker(t *testing.T) {
	noDocker(t)
	t.Setenv("REDIS_ADDR", "127.0.0.1:1")
	var skipped bool
	t.Run("own container", func(t *testing.T) {
		defer func() { skipped = t.Skipped() }()
		ContainerImage(t)
		t.Error("ContainerImage returned without Docker")
	})
	if !skipped {
		t.Fatal("the test was not skipped")
	}
}

// Where the public image is neither here nor pullable (our CI, offline
// laptops), tests take the local image and run without testcontainers'
// reaper, whose image cannot be pulled either.
func TestFallsBackToLocalImage(t *testing.T) {
	t.Setenv("WAITROOM_TEST_REDIS_IMAGE", "")
	t.Setenv("TESTCONTAINERS_RYUK_DISABLED", "")
	ctx := context.Background()
	got, err := pickImage(ctx, DefaultImage, LocalImage)
	var de *dockerError
	if errors.As(err, &de) {
		t.Skipf("needs Docker: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	cli, err := dockerClient(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	_, publicErr := cli.ImageInspect(ctx, DefaultImage)
	switch got {
	case DefaultImage:
		if publicErr != nil {
			t.Errorf("chose %s, which is not here: %v", got, publicErr)
		}
	case LocalImage:
		if publicErr == nil {
			t.Errorf("chose %s although %s is here", got, DefaultImage)
		}
		if v := os.Getenv("TESTCONTAINERS_RYUK_DISABLED"); v != "true" {
			t.Errorf("TESTCONTAINERS_RYUK_DISABLED=%q with the local image, want true", v)
		}
	default:
		t.Errorf("chose %q, want %s or %s", got, DefaultImage, LocalImage)
	}
}

// With neither image to be had, the one failure says what to do, instead
// of testcontainers' "no such host" deep in a pull.
func TestNoImageSaysWhatToDo(t *testing.T) {
	t.Setenv("WAITROOM_TEST_REDIS_IMAGE", "")
	_, err := pickImage(context.Background(), "waitroom/no-such-image:none", "waitroom/no-such-image:local")
	var de *dockerError
	if errors.As(err, &de) {
		t.Skipf("needs Docker: %v", err)
	}
	if err == nil {
		t.Fatal("pickImage found an image that does not exist")
	}
	for _, want := range []string{"cannot pull waitroom/no-such-image:none", "there is no waitroom/no-such-image:local", "scripts/test.sh", "scripts/build-images.sh redis", "WAITROOM_TEST_REDIS_IMAGE=" + LocalImage} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error does not say %q: %v", want, err)
		}
	}
}
