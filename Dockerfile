# Builds both binaries; docker-compose.yml runs them.
FROM rust:1.95-bookworm AS build
WORKDIR /src
COPY . .
RUN cargo build --release -p trellis-api -p trellis-worker

FROM debian:bookworm-slim
RUN apt-get update && apt-get install -y --no-install-recommends ca-certificates curl && rm -rf /var/lib/apt/lists/*
COPY --from=build /src/target/release/trellis-api /src/target/release/trellis-worker /usr/local/bin/
EXPOSE 8080
CMD ["trellis-api"]
