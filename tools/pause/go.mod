module pipeline-tests/pause

go 1.26.6
