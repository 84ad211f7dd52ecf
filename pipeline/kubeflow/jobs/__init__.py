"""Training on Kubernetes, for the Kubeflow compile's --trainer-workers: the launcher
(launcher.py, the launchers registry's 'kubernetes': which training API the cluster serves),
a Kubeflow Trainer v2 TrainJob (trainjob.py) or a Training Operator v1 TFJob (tfjob.py), and the
Kubernetes calls both make (k8s.py). Each worker pod runs launch/worker.py.
"""
