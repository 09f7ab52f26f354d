pub mod redis_server;
