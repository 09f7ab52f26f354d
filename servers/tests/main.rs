//! The servers as child processes and the network lab, one test binary with a module
//! per server (one build and one link).

mod etcd_servers;
mod net_lab;
mod sql_servers;
mod zk_servers;
