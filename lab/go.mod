module github.com/waitroom/waitroom/lab

go 1.26.8

require (
	github.com/redis/go-redis/v9 v9.23.0
	github.com/waitroom/waitroom v0.0.0
	golang.org/x/image v0.33.0
)

require (
	github.com/DataDog/datadog-agent/pkg/template v0.85.4 // indirect
	github.com/MicahParks/jwkset v0.11.4 // indirect
	github.com/MicahParks/keyfunc/v3 v3.9.1 // indirect
	github.com/cespare/xxhash/v2 v2.3.0 // indirect
	github.com/gaissmai/bart v0.30.0 // indirect
	github.com/golang-jwt/jwt/v5 v5.3.1 // indirect
	github.com/hashicorp/golang-lru/v2 v2.0.7 // indirect
	go.uber.org/atomic v1.12.0 // indirect
	golang.org/x/sys v0.48.0 // indirect
	golang.org/x/text v0.42.0 // indirect
	golang.org/x/time v0.15.0 // indirect
)

replace github.com/waitroom/waitroom => ../
