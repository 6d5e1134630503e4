"""fireval.metrics"""
