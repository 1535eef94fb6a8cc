#!/usr/bin/env bash
# release.sh: cut a release: CHANGELOG.md's Unreleased section becomes
# the version's, dated today, a new empty Unreleased goes above it, and
# the commit is tagged vX.Y.Z (annotated), which `git describe` (the
# build's version) and the images' labels then name.
#
#   scripts/release.sh X.Y.Z
#
# It refuses a version that is not semantic (MAJOR.MINOR.PATCH), a tag
# that exists, a tree with changes, and an Unreleased section with
# nothing in it. It pushes nothing: `git push origin main vX.Y.Z` does.
set -euo pipefail
cd "$(dirname "$0")/.."
version=${1:-}
if ! [[ $version =~ ^(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)$ ]]; then
	echo "release.sh: want a version MAJOR.MINOR.PATCH (e.g. 0.9.0), got '$version'" >&2
	exit 2
fi
tag=v$version
if git rev-parse -q --verify "refs/tags/$tag" >/dev/null; then
	echo "release.sh: $tag exists" >&2
	exit 1
fi
if [ -n "$(git status --porcelain)" ]; then
	echo "release.sh: the tree has uncommitted changes; commit or stash them first" >&2
	exit 1
fi
# What Unreleased holds: the lines between its heading and the next.
notes=$(awk '/^## \[Unreleased\]/{on=1; next} /^## \[/{on=0} on' CHANGELOG.md | grep -v '^[[:space:]]*$' || true)
if ! grep -q '^- ' <<<"$notes"; then
	echo "release.sh: CHANGELOG.md's Unreleased section lists no change" >&2
	exit 1
fi
today=$(date -u +%Y-%m-%d)
awk -v v="$version" -v d="$today" '
	/^## \[Unreleased\]/ && !done { print; print ""; print "## [" v "] - " d; done=1; next }
	{ print }' CHANGELOG.md >CHANGELOG.md.new
mv CHANGELOG.md.new CHANGELOG.md
git add CHANGELOG.md
git commit -q -m "Release $tag"
git tag -a "$tag" -m "waitroom $tag"
echo "release.sh: tagged $tag at $(git rev-parse --short HEAD); push with: git push origin HEAD $tag"
