# fixture-lib.sh: sourced by the fixture-*.sh scripts. fixture_repo DIR MONTH
# makes DIR a fresh git repository (a fixed identity) and defines c DAY MESSAGE,
# which commits everything at 2026-MONTH-0DAY 10:00 UTC, so a fixture's commits
# have the same hashes on every machine.
fixture_repo() {
  mkdir -p "$1" && cd "$1"
  git init -q .
  export GIT_AUTHOR_NAME=fixture GIT_AUTHOR_EMAIL=fixture@localhost
  export GIT_COMMITTER_NAME=fixture GIT_COMMITTER_EMAIL=fixture@localhost
  FIXTURE_MONTH=$2
}
c() {
  local when="2026-$FIXTURE_MONTH-0$1T10:00:00Z"
  GIT_AUTHOR_DATE="$when" GIT_COMMITTER_DATE="$when" git add -A &&
    GIT_AUTHOR_DATE="$when" GIT_COMMITTER_DATE="$when" git commit -q -m "$2"
}
